#include "collectives/backends/builtin/tcp_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "hora/logging.h"

namespace hora {
namespace collectives {
namespace builtin {
namespace {

constexpr uint32_t kHelloMagic = 0x48525443;  // "HRTC"
constexpr uint32_t kVersion = 1;
constexpr size_t kNonce = 16;
constexpr size_t kMac = 32;
constexpr size_t kHelloBytes = 16 + kNonce;

std::string errno_text(int err) { return std::strerror(err); }

// Closes the fd on scope exit unless released.
struct FdGuard {
  int fd;
  explicit FdGuard(int f) : fd(f) {}
  ~FdGuard() {
    if (fd >= 0) close(fd);
  }
  int release() {
    int f = fd;
    fd = -1;
    return f;
  }
};

void set_buffers(int fd, int bytes) {
  if (bytes <= 0) return;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

std::string peer_name(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "?";
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

// Reads (`reading`) or writes exactly `bytes` on the nonblocking `fd`, polling until `deadline`.
Status io_exact(int fd, void* data, size_t bytes, bool reading, Deadline deadline,
                const std::string& who) {
  auto* p = static_cast<uint8_t*>(data);
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = reading ? recv(fd, p + done, bytes - done, MSG_DONTWAIT)
                        : send(fd, p + done, bytes - done, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0 && reading)
      return Status::remote(who + " closed the connection during the handshake");
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return Status::io(who + ": " + (reading ? "recv" : "send") + " failed: " + errno_text(errno));
    if (deadline.expired()) return Status::timeout("handshake with " + who + " timed out");
    pollfd pfd{fd, static_cast<short>(reading ? POLLIN : POLLOUT), 0};
    poll(&pfd, 1, static_cast<int>(std::min<int64_t>(deadline.remaining().count() + 1, 1000)));
  }
  return Status::OK();
}

void hmac(const std::string& secret, const std::string& label, const uint8_t* a, size_t an,
          const uint8_t* b, size_t bn, uint32_t from, uint32_t to, uint8_t out[kMac]) {
  std::vector<uint8_t> msg(label.begin(), label.end());
  msg.insert(msg.end(), a, a + an);
  msg.insert(msg.end(), b, b + bn);
  for (uint32_t v : {from, to})
    for (int i = 0; i < 4; ++i) msg.push_back(static_cast<uint8_t>(v >> (8 * i)));
  unsigned int len = kMac;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), msg.data(), msg.size(), out,
       &len);
}

void put32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
uint32_t get32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

Status connector_handshake(int fd, int rank, int peer, const std::string& secret, Deadline deadline,
                           const std::string& who) {
  uint8_t hello[kHelloBytes];
  put32(hello, kHelloMagic);
  put32(hello + 4, kVersion);
  put32(hello + 8, static_cast<uint32_t>(rank));
  put32(hello + 12, static_cast<uint32_t>(peer));
  uint8_t* nonce_c = hello + 16;
  if (RAND_bytes(nonce_c, kNonce) != 1) return Status::internal("RAND_bytes failed");
  HORA_RETURN_IF_ERROR(io_exact(fd, hello, sizeof hello, false, deadline, who));
  uint8_t challenge[kNonce + kMac];
  HORA_RETURN_IF_ERROR(io_exact(fd, challenge, sizeof challenge, true, deadline, who));
  uint8_t expect[kMac];
  hmac(secret, "hora-builtin-acceptor", nonce_c, kNonce, nullptr, 0, rank, peer, expect);
  if (CRYPTO_memcmp(expect, challenge + kNonce, kMac) != 0) {
    return Status::failed_precondition(
        who + " failed the job-secret check (a process of another job, or a wrong HORA_SECRET)");
  }
  uint8_t proof[kMac];
  hmac(secret, "hora-builtin-connector", challenge, kNonce, nonce_c, kNonce, rank, peer, proof);
  HORA_RETURN_IF_ERROR(io_exact(fd, proof, sizeof proof, false, deadline, who));
  uint8_t ack = 0;
  HORA_RETURN_IF_ERROR(io_exact(fd, &ack, 1, true, deadline, who));
  if (ack != 1) return Status::io(who + " sent a bad handshake acknowledgement");
  return Status::OK();
}

// Returns the authenticated peer rank, or why the connection is dropped.
StatusOr<int> acceptor_handshake(int fd, int rank, const std::set<int>& expected,
                                 const std::string& secret, Deadline deadline,
                                 const std::string& who) {
  uint8_t hello[kHelloBytes];
  HORA_RETURN_IF_ERROR(io_exact(fd, hello, sizeof hello, true, deadline, who));
  if (get32(hello) != kHelloMagic || get32(hello + 4) != kVersion)
    return Status::io(who + " sent a malformed hello (not a hora builtin peer)");
  uint32_t from = get32(hello + 8);
  uint32_t to = get32(hello + 12);
  if (to != static_cast<uint32_t>(rank) || expected.count(static_cast<int>(from)) == 0) {
    return Status::io(who + " claims to be rank " + std::to_string(from) + " connecting to rank " +
                      std::to_string(to) + ", which this rank does not expect");
  }
  uint8_t challenge[kNonce + kMac];
  if (RAND_bytes(challenge, kNonce) != 1) return Status::internal("RAND_bytes failed");
  hmac(secret, "hora-builtin-acceptor", hello + 16, kNonce, nullptr, 0, from, to,
       challenge + kNonce);
  HORA_RETURN_IF_ERROR(io_exact(fd, challenge, sizeof challenge, false, deadline, who));
  uint8_t proof[kMac];
  HORA_RETURN_IF_ERROR(io_exact(fd, proof, sizeof proof, true, deadline, who));
  uint8_t expect[kMac];
  hmac(secret, "hora-builtin-connector", challenge, kNonce, hello + 16, kNonce, from, to, expect);
  if (CRYPTO_memcmp(expect, proof, kMac) != 0)
    return Status::failed_precondition(who + " does not know the job secret (HMAC mismatch)");
  uint8_t ack = 1;
  HORA_RETURN_IF_ERROR(io_exact(fd, &ack, 1, false, deadline, who));
  return static_cast<int>(from);
}

StatusOr<int> listen_on(const std::string& host, int buffer_bytes, int* port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::io("socket failed: " + errno_text(errno));
  FdGuard guard(fd);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  set_buffers(fd, buffer_bytes);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = 0;
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1)
    return Status::invalid_argument("bind address '" + host + "' is not an IPv4 address");
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    return Status::io("bind to " + host + " failed: " + errno_text(errno));
  if (listen(fd, 128) != 0) return Status::io("listen failed: " + errno_text(errno));
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return guard.release();
}

StatusOr<int> connect_to(const std::string& address, int buffer_bytes, Deadline deadline,
                         const std::string& who) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos)
    return Status::io(who + " published a bad address '" + address + "'");
  std::string host = address.substr(0, colon);
  std::string port = address.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || res == nullptr)
    return Status::io(who + ": cannot resolve '" + address + "'");
  sockaddr_in target;
  std::memcpy(&target, res->ai_addr, sizeof target);
  freeaddrinfo(res);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::io("socket failed: " + errno_text(errno));
  FdGuard guard(fd);
  set_buffers(fd, buffer_bytes);
  set_nodelay(fd);
  if (connect(fd, reinterpret_cast<sockaddr*>(&target), sizeof target) != 0 && errno != EINPROGRESS)
    return Status::io("connecting to " + who + " failed: " + errno_text(errno));
  pollfd pfd{fd, POLLOUT, 0};
  int rc = poll(&pfd, 1, static_cast<int>(deadline.remaining().count()));
  if (rc == 0) return Status::timeout("connecting to " + who + " timed out");
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) return Status::io("connecting to " + who + " failed: " + errno_text(err));
  return guard.release();
}

}  // namespace

TcpLink::TcpLink(int fd, int peer) : fd_(fd), peer_(peer) {}
TcpLink::~TcpLink() {
  if (fd_ >= 0) close(fd_);
}

Status TcpLink::broken(const char* op, int err) const {
  if (err == 0 || err == ECONNRESET || err == EPIPE) {
    return Status::remote("rank " + std::to_string(peer_) +
                          " closed its TCP connection (its process exited or failed)" +
                          (err ? std::string(": ") + errno_text(err) : std::string()));
  }
  return Status::io(std::string("TCP ") + op + " to rank " + std::to_string(peer_) +
                    " failed: " + errno_text(err));
}

StatusOr<size_t> TcpLink::write_some(const ConstSpan* spans, int count) {
  iovec iov[4];
  int n = 0;
  for (int i = 0; i < count && n < 4; ++i) {
    if (spans[i].bytes == 0) continue;
    iov[n].iov_base = const_cast<void*>(spans[i].data);
    iov[n].iov_len = spans[i].bytes;
    ++n;
  }
  if (n == 0) return size_t{0};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = n;
  for (;;) {
    ssize_t r = sendmsg(fd_, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (r >= 0) return static_cast<size_t>(r);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return size_t{0};
    return broken("send", errno);
  }
}

StatusOr<size_t> TcpLink::read_some(void* data, size_t bytes) {
  if (bytes == 0) return size_t{0};
  for (;;) {
    ssize_t r = recv(fd_, data, bytes, MSG_DONTWAIT);
    if (r > 0) return static_cast<size_t>(r);
    if (r == 0) return broken("recv", 0);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return size_t{0};
    return broken("recv", errno);
  }
}

std::string tcp_address_key(const std::string& key_prefix, int rank) {
  return key_prefix + "tcp/addr/" + std::to_string(rank);
}

StatusOr<std::vector<std::unique_ptr<ByteLink>>> connect_tcp_mesh(
    Store& store, const std::string& key_prefix, int rank, int size, const std::vector<int>& peers,
    const TcpMeshOptions& options, Deadline deadline) {
  std::vector<std::unique_ptr<ByteLink>> links(size);
  if (peers.empty()) return links;
  int port = 0;
  HORA_ASSIGN_OR_RETURN(int listen_fd,
                        listen_on(options.bind_host, options.socket_buffer_bytes, &port));
  FdGuard listener(listen_fd);
  std::string address = options.advertise_host + ":" + std::to_string(port);
  HORA_RETURN_IF_ERROR(
      store.set(tcp_address_key(key_prefix, rank), Bytes(address.begin(), address.end())));

  // Lower rank connects to higher: first every higher peer (their kernels queue the
  // connection even before they accept), then accept every lower one.
  std::set<int> lower;
  for (int peer : peers) {
    if (peer < rank) {
      lower.insert(peer);
      continue;
    }
    HORA_ASSIGN_OR_RETURN(Bytes value, store.get(tcp_address_key(key_prefix, peer), deadline));
    std::string peer_address(value.begin(), value.end());
    std::string who = "rank " + std::to_string(peer) + " at " + peer_address;
    HORA_ASSIGN_OR_RETURN(int fd,
                          connect_to(peer_address, options.socket_buffer_bytes, deadline, who));
    FdGuard guard(fd);
    HORA_RETURN_IF_ERROR(connector_handshake(fd, rank, peer, options.secret, deadline, who));
    links[peer] = std::make_unique<TcpLink>(guard.release(), peer);
  }
  while (!lower.empty()) {
    if (deadline.expired()) {
      std::string missing;
      for (int r : lower) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      return Status::timeout("rank " + std::to_string(rank) +
                             " timed out waiting for TCP connections from rank(s) " + missing);
    }
    pollfd pfd{listener.fd, POLLIN, 0};
    poll(&pfd, 1, static_cast<int>(std::min<int64_t>(deadline.remaining().count() + 1, 1000)));
    int fd = accept4(listener.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) continue;
    FdGuard guard(fd);
    set_nodelay(fd);
    std::string who = "connection from " + peer_name(fd);
    Deadline hs_deadline(
        std::min(deadline.at(), Deadline::Clock::now() + options.handshake_timeout));
    auto from = acceptor_handshake(fd, rank, lower, options.secret, hs_deadline, who);
    if (!from.ok()) {
      HORA_LOG(kWarning) << "rank " << rank << " dropped a TCP " << who << ": "
                         << from.status().to_string();
      continue;
    }
    lower.erase(from.value());
    links[from.value()] = std::make_unique<TcpLink>(guard.release(), from.value());
  }
  return links;
}

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
