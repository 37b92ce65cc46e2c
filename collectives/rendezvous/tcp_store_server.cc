// TcpStoreServer: one epoll thread serving every client of a job's store.
//
// Each connection moves through: challenge sent -> proof checked -> serving. Requests are
// answered in order per connection. A get/wait whose keys are missing parks the connection
// (its later requests stay buffered) until a set/add makes the keys exist or its timeout
// passes; parked waits are re-checked on every write and at the nearest timeout, so nothing
// polls.
#include "collectives/rendezvous/tcp_store_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <thread>

#include "collectives/rendezvous/memory_store.h"
#include "collectives/rendezvous/store_auth.h"
#include "collectives/rendezvous/store_protocol.h"
#include "hora/logging.h"

namespace hora {
namespace collectives {
namespace {

using Clock = std::chrono::steady_clock;

struct Connection {
  int fd = -1;
  std::string peer;
  bool is_authenticated = false;
  Bytes nonce;
  FrameParser parser{0};
  std::deque<Bytes> requests;  // decoded in order; the front may be parked
  std::optional<Clock::time_point> parked_until;
  Bytes out;
};

class Server : public TcpStoreServer {
 public:
  Server(int listen_fd, int wake_fd, int port, Options options)
      : listen_fd_(listen_fd), wake_fd_(wake_fd), port_(port), options_(std::move(options)) {}
  ~Server() override { stop(); }

  void run_in_thread() {
    thread_ = std::thread([this] { loop(); });
  }
  int port() const override { return port_; }
  void stop() override {
    if (stopping_.exchange(true)) {
      if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
      return;
    }
    uint64_t one = 1;
    ssize_t ignored = ::write(wake_fd_, &one, sizeof(one));
    (void)ignored;
    if (thread_.joinable()) thread_.join();
    for (auto& [fd, c] : conns_) ::close(fd);
    conns_.clear();
    ::close(listen_fd_);
    ::close(wake_fd_);
  }

 private:
  void loop() {
    prctl(PR_SET_NAME, "hora-store");
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    add_fd(listen_fd_);
    add_fd(wake_fd_);
    epoll_event events[64];
    while (!stopping_.load()) {
      int n = ::epoll_wait(epoll_, events, 64, next_timeout_ms());
      if (n < 0 && errno != EINTR) break;
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == wake_fd_) continue;
        if (fd == listen_fd_) {
          accept_all();
          continue;
        }
        if (events[i].events & EPOLLIN) on_readable(fd);
        auto it = conns_.find(fd);
        if (it != conns_.end() && (events[i].events & EPOLLOUT)) flush(it->second);
        if (it != conns_.end() && (events[i].events & (EPOLLHUP | EPOLLERR)) &&
            !(events[i].events & EPOLLIN))
          close_conn(fd, nullptr);
      }
      serve_all();
    }
    ::close(epoll_);
  }

  void add_fd(int fd) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
  }

  int next_timeout_ms() const {
    std::optional<Clock::time_point> nearest;
    for (const auto& [fd, c] : conns_)
      if (c.parked_until && (!nearest || *c.parked_until < *nearest)) nearest = c.parked_until;
    if (!nearest) return -1;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*nearest - Clock::now());
    return static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(ms.count() + 1, 1 << 30)));
  }

  void accept_all() {
    while (true) {
      sockaddr_storage addr{};
      socklen_t len = sizeof(addr);
      int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      Connection c;
      c.fd = fd;
      char host[INET6_ADDRSTRLEN] = "?";
      int port = 0;
      if (addr.ss_family == AF_INET) {
        auto* a = reinterpret_cast<sockaddr_in*>(&addr);
        ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
        port = ntohs(a->sin_port);
      }
      c.peer = std::string(host) + ":" + std::to_string(port);
      // Before authentication a client may send only its proof: a small frame.
      c.parser = FrameParser(64);
      auto nonce = make_auth_nonce();
      if (!nonce.ok()) {
        ::close(fd);
        continue;
      }
      c.nonce = nonce.value();
      append_frame(c.nonce, &c.out);
      add_fd(fd);
      auto& stored = conns_[fd] = std::move(c);
      flush(stored);
    }
  }

  void on_readable(int fd) {
    auto it = conns_.find(fd);
    if (it == conns_.end()) return;
    Connection& c = it->second;
    uint8_t buf[65536];
    while (true) {
      ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n <= 0) {
        if (c.parser.buffered_bytes() > 0) {
          HORA_LOG(kDebug) << "store client " << c.peer << " left mid-frame";
        }
        close_conn(fd, nullptr);
        return;
      }
      std::vector<Bytes> frames;
      Status s = c.parser.feed(buf, static_cast<size_t>(n), &frames);
      if (!s.ok()) {
        close_conn(fd, s.message().c_str());
        return;
      }
      for (Bytes& f : frames) {
        if (!c.is_authenticated) {
          if (!auth_proof_matches(options_.secret, c.nonce, f)) {
            close_conn(fd, "authentication failed (wrong or missing HORA_SECRET proof)");
            return;
          }
          c.is_authenticated = true;
          c.parser = FrameParser(options_.max_frame_bytes);
          append_frame(Bytes{kAuthAccepted}, &c.out);
          continue;
        }
        c.requests.push_back(std::move(f));
      }
    }
  }

  void close_conn(int fd, const char* reason) {
    auto it = conns_.find(fd);
    if (it == conns_.end()) return;
    if (reason) {
      HORA_LOG(kWarning) << "store: dropping client " << it->second.peer << ": " << reason;
    }
    ::epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    conns_.erase(it);
  }

  // Serves every connection's queued requests until each is empty or parked; repeats while
  // a write may have unparked another connection.
  void serve_all() {
    bool progressed = true;
    while (progressed) {
      progressed = false;
      std::vector<int> fds;
      for (auto& [fd, c] : conns_) fds.push_back(fd);
      for (int fd : fds) {
        auto it = conns_.find(fd);
        if (it == conns_.end()) continue;
        Connection& c = it->second;
        bool wrote = false;
        while (!c.requests.empty()) {
          auto outcome = serve_front(c, &wrote);
          if (!outcome) break;  // parked
          c.requests.pop_front();
          c.parked_until.reset();
        }
        progressed = progressed || wrote;
        if (conns_.count(fd)) flush(c);
      }
    }
  }

  // Returns true when the front request was answered (or dropped), false when it is parked.
  bool serve_front(Connection& c, bool* wrote) {
    auto decoded = decode_request(c.requests.front());
    StoreResponse r;
    if (!decoded.ok()) {
      r.code = StatusCode::kInvalidArgument;
      r.message = "malformed store request: " + decoded.status().message();
      append_frame(encode_response(r), &c.out);
      return true;
    }
    const StoreRequest& q = decoded.value();
    switch (q.type) {
      case RequestType::kSet:
        data_[q.keys[0]] = q.value;
        *wrote = true;
        break;
      case RequestType::kAdd: {
        int64_t current = 0;
        auto it = data_.find(q.keys[0]);
        bool ok = true;
        if (it != data_.end()) {
          auto parsed = parse_counter(q.keys[0], it->second);
          if (!parsed.ok()) {
            r.code = parsed.status().code();
            r.message = parsed.status().message();
            ok = false;
          } else {
            current = parsed.value();
          }
        }
        if (ok) {
          r.number =
              static_cast<int64_t>(static_cast<uint64_t>(current) + static_cast<uint64_t>(q.delta));
          data_[q.keys[0]] = format_counter(r.number);
          *wrote = true;
        }
        break;
      }
      case RequestType::kCheck: r.number = missing(q.keys).empty() ? 1 : 0; break;
      case RequestType::kRemove: r.number = data_.erase(q.keys[0]) > 0 ? 1 : 0; break;
      case RequestType::kGet:
      case RequestType::kWait: {
        std::vector<std::string> absent = missing(q.keys);
        if (!absent.empty()) {
          if (!c.parked_until)
            c.parked_until =
                Clock::now() + std::chrono::milliseconds(std::max<int64_t>(0, q.timeout_ms));
          if (Clock::now() < *c.parked_until) return false;
          r.code = StatusCode::kTimeout;
          r.message = std::string("store ") + request_type_name(q.type) +
                      " timed out; keys still missing: " + join_keys(absent);
        } else if (q.type == RequestType::kGet) {
          r.value = data_[q.keys[0]];
        }
        break;
      }
    }
    append_frame(encode_response(r), &c.out);
    return true;
  }

  std::vector<std::string> missing(const std::vector<std::string>& keys) const {
    std::vector<std::string> out;
    for (const auto& k : keys)
      if (!data_.count(k)) out.push_back(k);
    return out;
  }

  void flush(Connection& c) {
    while (!c.out.empty()) {
      ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) break;
      if (n <= 0) {
        close_conn(c.fd, nullptr);
        return;
      }
      c.out.erase(c.out.begin(), c.out.begin() + n);
    }
    epoll_event ev{};
    ev.events = EPOLLIN | (c.out.empty() ? 0u : static_cast<uint32_t>(EPOLLOUT));
    ev.data.fd = c.fd;
    ::epoll_ctl(epoll_, EPOLL_CTL_MOD, c.fd, &ev);
  }

  int listen_fd_;
  int wake_fd_;
  int port_;
  Options options_;
  int epoll_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  // Touched only by the serving thread (and by stop() after it joined).
  std::map<int, Connection> conns_;
  std::map<std::string, Bytes> data_;
};

}  // namespace

StatusOr<std::unique_ptr<TcpStoreServer>> TcpStoreServer::start(const Options& options) {
  if (options.secret.empty())
    return Status::invalid_argument("the store needs a job secret (HORA_SECRET): got none");
  if (options.port < 0 || options.port > 65535)
    return Status::invalid_argument("store port " + std::to_string(options.port) +
                                    " is out of range: expected 0..65535");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(options.port));
  if (::inet_pton(AF_INET, options.bind_address.c_str(), &addr.sin_addr) != 1)
    return Status::invalid_argument("store bind address '" + options.bind_address +
                                    "' is not an IPv4 address");
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::io(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd, 1024) != 0) {
    Status s = Status::io("store cannot listen on " + options.bind_address + ":" +
                          std::to_string(options.port) + ": " + std::strerror(errno));
    ::close(fd);
    return s;
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int wake = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  auto server = std::make_unique<Server>(fd, wake, ntohs(addr.sin_port), options);
  server->run_in_thread();
  return std::unique_ptr<TcpStoreServer>(std::move(server));
}

}  // namespace collectives
}  // namespace hora
