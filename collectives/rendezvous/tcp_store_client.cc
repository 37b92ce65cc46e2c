#include "collectives/rendezvous/tcp_store_client.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "collectives/rendezvous/memory_store.h"
#include "collectives/rendezvous/store_auth.h"
#include "collectives/rendezvous/store_protocol.h"
#include "hora/mutex.h"
#include "hora/thread_annotations.h"

namespace hora {
namespace collectives {
namespace {

constexpr size_t kMaxResponseBytes = size_t{256} << 20;
// Calls that cannot block on the server (set, add, check, remove) still get a deadline.
constexpr auto kCallTimeout = std::chrono::minutes(5);

class Client : public TcpStoreClient {
 public:
  Client(int fd, std::string where)
      : fd_(fd), where_(std::move(where)), parser_(kMaxResponseBytes) {}
  ~Client() override { ::close(fd_); }

  Status authenticate(const std::string& secret, Deadline deadline) {
    BasicMutexLock<TimedMutex> lock(&mu_);  // before the client is shared; for the analysis
    HORA_ASSIGN_OR_RETURN(Bytes nonce, read_frame(deadline));
    if (nonce.size() != kAuthNonceBytes)
      return Status::io("store at " + where_ + " sent a malformed challenge");
    Bytes frame;
    append_frame(auth_proof(secret, nonce), &frame);
    HORA_RETURN_IF_ERROR(write_all(frame, deadline));
    auto accepted = read_frame(deadline);
    if (!accepted.ok() || accepted.value().size() != 1 || accepted.value()[0] != kAuthAccepted)
      return Status::failed_precondition("store at " + where_ +
                                         " refused authentication: HORA_SECRET does not match "
                                         "the job's secret");
    return Status::OK();
  }

  Status set(const std::string& key, const Bytes& value) override {
    StoreRequest r;
    r.type = RequestType::kSet;
    r.keys = {key};
    r.value = value;
    return call(r, Deadline::after(kCallTimeout)).status();
  }
  StatusOr<Bytes> get(const std::string& key, Deadline deadline) override {
    StoreRequest r;
    r.type = RequestType::kGet;
    r.keys = {key};
    r.timeout_ms = deadline.remaining().count();
    HORA_ASSIGN_OR_RETURN(StoreResponse response, call(r, deadline));
    return std::move(response.value);
  }
  StatusOr<int64_t> add(const std::string& key, int64_t delta) override {
    StoreRequest r;
    r.type = RequestType::kAdd;
    r.keys = {key};
    r.delta = delta;
    HORA_ASSIGN_OR_RETURN(StoreResponse response, call(r, Deadline::after(kCallTimeout)));
    return response.number;
  }
  StatusOr<bool> check(const std::vector<std::string>& keys) override {
    StoreRequest r;
    r.type = RequestType::kCheck;
    r.keys = keys;
    HORA_ASSIGN_OR_RETURN(StoreResponse response, call(r, Deadline::after(kCallTimeout)));
    return response.number != 0;
  }
  Status wait(const std::vector<std::string>& keys, Deadline deadline) override {
    StoreRequest r;
    r.type = RequestType::kWait;
    r.keys = keys;
    r.timeout_ms = deadline.remaining().count();
    return call(r, deadline).status();
  }
  Status set_until(const std::string& key, const Bytes& value, Deadline deadline) override {
    StoreRequest r;
    r.type = RequestType::kSet;
    r.keys = {key};
    r.value = value;
    return call(r, deadline, std::chrono::milliseconds(0)).status();
  }
  StatusOr<bool> check_until(const std::vector<std::string>& keys, Deadline deadline) override {
    StoreRequest r;
    r.type = RequestType::kCheck;
    r.keys = keys;
    HORA_ASSIGN_OR_RETURN(StoreResponse response, call(r, deadline, std::chrono::milliseconds(0)));
    return response.number != 0;
  }
  StatusOr<bool> remove(const std::string& key) override {
    StoreRequest r;
    r.type = RequestType::kRemove;
    r.keys = {key};
    HORA_ASSIGN_OR_RETURN(StoreResponse response, call(r, Deadline::after(kCallTimeout)));
    return response.number != 0;
  }

 private:
  // One request, one response. The server answers blocking requests itself at their timeout;
  // the client's own deadline (plus `grace` for the answer to arrive) is the backstop. Waiting
  // for another thread's request on the connection counts against the same deadline.
  StatusOr<StoreResponse> call(const StoreRequest& request, Deadline deadline,
                               std::chrono::milliseconds grace = std::chrono::seconds(1)) {
    const Deadline io_deadline(deadline.at() + grace);
    if (!mu_.try_lock_until(io_deadline.at()))
      return Status::timeout(std::string("store ") + request_type_name(request.type) + " of " +
                             join_keys(request.keys) + " at " + where_ +
                             ": another request held the connection past the deadline");
    StatusOr<StoreResponse> response = call_locked(request, io_deadline);
    mu_.unlock();
    return response;
  }

  StatusOr<StoreResponse> call_locked(const StoreRequest& request, Deadline io_deadline)
      HORA_REQUIRES(mu_) {
    if (!broken_.ok()) return broken_;
    Bytes frame;
    append_frame(encode_request(request), &frame);
    Status s = write_all(frame, io_deadline);
    StatusOr<Bytes> payload = s.ok() ? read_frame(io_deadline) : StatusOr<Bytes>(s);
    if (!payload.ok()) {
      // A response may still arrive later and would be taken for the next one: the
      // connection can no longer be trusted.
      broken_ = payload.status();
      return Status(payload.status().code(), std::string("store ") +
                                                 request_type_name(request.type) + " of " +
                                                 join_keys(request.keys) + " at " + where_ + ": " +
                                                 payload.status().message());
    }
    HORA_ASSIGN_OR_RETURN(StoreResponse response, decode_response(payload.value()));
    if (response.code != StatusCode::kOk) return Status(response.code, response.message);
    return response;
  }

  Status wait_fd(short events, Deadline deadline, const char* what) const {
    pollfd p{fd_, events, 0};
    while (true) {
      const int ms = static_cast<int>(std::min<int64_t>(deadline.remaining().count(), 1 << 30));
      int n = ::poll(&p, 1, ms);
      if (n > 0) return Status::OK();
      if (n == 0) return Status::timeout(std::string("timed out ") + what);
      if (errno != EINTR) return Status::io(std::string("poll failed: ") + std::strerror(errno));
    }
  }

  Status write_all(const Bytes& data, Deadline deadline) HORA_REQUIRES(mu_) {
    size_t done = 0;
    while (done < data.size()) {
      HORA_RETURN_IF_ERROR(wait_fd(POLLOUT, deadline, "sending to the store"));
      ssize_t n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) return Status::remote("the store at " + where_ + " closed the connection");
      done += static_cast<size_t>(n);
    }
    return Status::OK();
  }

  StatusOr<Bytes> read_frame(Deadline deadline) HORA_REQUIRES(mu_) {
    uint8_t buf[65536];
    while (pending_.empty()) {
      HORA_RETURN_IF_ERROR(wait_fd(POLLIN, deadline, "waiting for the store's answer"));
      ssize_t n = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) return Status::remote("the store at " + where_ + " closed the connection");
      HORA_RETURN_IF_ERROR(parser_.feed(buf, static_cast<size_t>(n), &pending_));
    }
    Bytes frame = std::move(pending_.front());
    pending_.erase(pending_.begin());
    return frame;
  }

  TimedMutex mu_;  // serialises requests on fd_
  int fd_;
  std::string where_;
  FrameParser parser_ HORA_GUARDED_BY(mu_);
  std::vector<Bytes> pending_ HORA_GUARDED_BY(mu_);
  Status broken_ HORA_GUARDED_BY(mu_);
};

StatusOr<int> dial(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
  if (rc != 0)
    return Status::invalid_argument("cannot resolve store host '" + host +
                                    "': " + gai_strerror(rc));
  Status last = Status::io("no address for " + host);
  for (addrinfo* a = list; a; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      ::freeaddrinfo(list);
      return fd;
    }
    last = Status::io(std::string("connect: ") + std::strerror(errno));
    ::close(fd);
  }
  ::freeaddrinfo(list);
  return last;
}

}  // namespace

StatusOr<std::unique_ptr<TcpStoreClient>> TcpStoreClient::connect(const std::string& host, int port,
                                                                  const std::string& secret,
                                                                  Deadline deadline) {
  if (port <= 0 || port > 65535)
    return Status::invalid_argument("store port " + std::to_string(port) +
                                    " is out of range: expected 1..65535");
  const std::string where = host + ":" + std::to_string(port);
  auto backoff = std::chrono::milliseconds(5);
  while (true) {
    auto fd = dial(host, port);
    if (fd.ok()) {
      auto client = std::make_unique<Client>(fd.value(), where);
      HORA_RETURN_IF_ERROR(client->authenticate(secret, deadline));
      return std::unique_ptr<TcpStoreClient>(std::move(client));
    }
    if (fd.status().code() == StatusCode::kInvalidArgument) return fd.status();
    if (deadline.expired())
      return Status::timeout("could not reach the rendezvous store at " + where + " (" +
                             fd.status().message() +
                             "); check HORA_RENDEZVOUS_ADDR/PORT and that the launcher runs");
    std::this_thread::sleep_for(std::min(backoff, deadline.remaining()));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
  }
}

}  // namespace collectives
}  // namespace hora
