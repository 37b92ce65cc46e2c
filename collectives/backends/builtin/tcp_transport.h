// TCP transport: one authenticated connection per peer, driven nonblocking by the calling
// thread (no extra thread).
//
// Set-up (connect_tcp_mesh): every rank listens on an ephemeral port and publishes
// "host:port" under tcp_address_key(); the lower rank of each pair connects to the higher.
// Handshake, both sides proving the job secret without sending it:
//   connector -> acceptor  hello {magic, version, from, to, nonce_c}
//   acceptor  -> connector nonce_a, HMAC-SHA256(secret, "acceptor" | nonce_c | from | to)
//   connector -> acceptor  HMAC-SHA256(secret, "connector" | nonce_a | nonce_c | from | to)
//   acceptor  -> connector ack
// A stranger (garbage, a wrong secret, an unexpected rank, silence past the handshake timeout)
// is dropped with a logged reason and the acceptor keeps waiting for the real peers. The
// listener is closed once every peer is connected. Sockets get TCP_NODELAY and large buffers.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "collectives/backends/builtin/byte_link.h"
#include "collectives/rendezvous/store.h"
#include "core/base/deadline.h"

namespace hora {
namespace collectives {
namespace builtin {

class TcpLink : public ByteLink {
 public:
  // Takes ownership of the connected nonblocking socket `fd` to global rank `peer`.
  TcpLink(int fd, int peer);
  ~TcpLink() override;
  TcpLink(const TcpLink&) = delete;
  TcpLink& operator=(const TcpLink&) = delete;

  StatusOr<size_t> write_some(const ConstSpan* spans, int count) override;
  StatusOr<size_t> read_some(void* data, size_t bytes) override;
  int fd() const override { return fd_; }
  const char* kind() const override { return "tcp"; }

 private:
  Status broken(const char* op, int err) const;
  int fd_;
  int peer_;
};

struct TcpMeshOptions {
  std::string secret;                        // the job secret (HMAC key)
  std::string bind_host = "127.0.0.1";       // where to listen
  std::string advertise_host = "127.0.0.1";  // what peers connect to
  int socket_buffer_bytes = 4 << 20;         // SO_SNDBUF/SO_RCVBUF, capped by the kernel max
  std::chrono::milliseconds handshake_timeout{5000};  // per connection, against silent strangers
};

// The store key (under the caller's prefix) that holds rank `rank`'s "host:port".
std::string tcp_address_key(const std::string& key_prefix, int rank);

// Connects this rank (`rank`) to every rank in `peers` (which must list this rank for each of
// them too). Returns links indexed by global rank (`size` entries, null for ranks not in
// `peers`). Errors name the peer and its address.
StatusOr<std::vector<std::unique_ptr<ByteLink>>> connect_tcp_mesh(
    Store& store, const std::string& key_prefix, int rank, int size, const std::vector<int>& peers,
    const TcpMeshOptions& options, Deadline deadline);

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
