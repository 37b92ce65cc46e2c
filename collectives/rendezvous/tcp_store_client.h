// TcpStoreClient: a Store backed by a TcpStoreServer. Connects, proves the job secret
// (HMAC-SHA256 challenge-response), then serves set/get/add/check/wait/remove over one
// connection. Thread-safe: one mutex serialises requests on the connection.
#pragma once

#include <memory>
#include <string>

#include "collectives/rendezvous/store.h"
#include "core/base/deadline.h"

namespace hora {
namespace collectives {

class TcpStoreClient : public Store {
 public:
  // Connects to host:port, retrying refused connections until `deadline` (the server may
  // start after the client), then authenticates. kTimeout names host:port; a wrong secret
  // gives kFailedPrecondition ("store refused authentication").
  static StatusOr<std::unique_ptr<TcpStoreClient>> connect(const std::string& host, int port,
                                                           const std::string& secret,
                                                           Deadline deadline);
};

}  // namespace collectives
}  // namespace hora
