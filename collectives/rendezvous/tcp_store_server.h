// TcpStoreServer: hosts the key-value store of one job over TCP. One thread runs an event
// loop (epoll) that serves every client; the launcher (horarun) or rank 0 owns the server.
//
// Security: a client must answer an HMAC-SHA256 challenge keyed by the job secret before it
// may read or write any key; a client that fails is disconnected, and the reason is logged.
// Robustness: every frame is bounded (a length above max_frame_bytes closes that connection);
// malformed input closes that connection only; other clients are unaffected.
//
// Threads: start() spawns the serving thread; stop() (or the destructor) joins it. port() and
// stop() may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "hora/status.h"

namespace hora {
namespace collectives {

class TcpStoreServer {
 public:
  struct Options {
    std::string bind_address = "127.0.0.1";  // "0.0.0.0" or an interface's address for multi-host
    int port = 0;                            // 0: the OS chooses a free port
    std::string secret;                      // the job secret (HORA_SECRET); must not be empty
    size_t max_frame_bytes = size_t{256} << 20;
  };

  // Binds, listens and starts serving. Fails (kIo) when the address cannot be bound and
  // (kInvalidArgument) on an empty secret.
  static StatusOr<std::unique_ptr<TcpStoreServer>> start(const Options& options);

  virtual ~TcpStoreServer() = default;
  // The port actually bound.
  virtual int port() const = 0;
  // Stops serving and joins the thread. Idempotent.
  virtual void stop() = 0;
};

}  // namespace collectives
}  // namespace hora
