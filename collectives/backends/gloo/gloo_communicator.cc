#include "collectives/backends/gloo/gloo_communicator.h"

#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>

#include <algorithm>
#include <csignal>
#include <utility>

#include "collectives/backends/gloo/gloo_communicator_impl.h"
#include "collectives/backends/gloo/gloo_errors.h"
#include "collectives/backends/gloo/gloo_store_adapter.h"
#include "collectives/backends/unusable_status.h"
#include "collectives/failed_ranks.h"
#include "hora/logging.h"

namespace hora {
namespace collectives {
namespace gloo_backend {
namespace {

// Point-to-point slots: apart from gloo's collective prefixes (0x01-0x0f) and from the small
// slot numbers its older algorithms take with Context::nextSlot().
constexpr uint64_t kP2pSlotPrefix = uint64_t{0xA5} << 56;

uint64_t p2p_slot(uint32_t tag) { return kP2pSlotPrefix | tag; }

// Gloo's TCP pairs write with plain write(2): a write to a peer that died raises SIGPIPE,
// whose default action kills this survivor before it can report the dead rank. Ignore it
// unless the application installed its own handler (then the application decides); the write
// then fails with EPIPE, which gloo turns into an exception and hora into kRemote.
void ignore_sigpipe_unless_handled() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL)
    std::signal(SIGPIPE, SIG_IGN);
}

}  // namespace

// ---- GlooCommunicator ---------------------------------------------------------------------

GlooCommunicator::GlooCommunicator(std::shared_ptr<::gloo::Context> context,
                                   const GlooOptions& options, Store& store)
    : rank_(context->rank),
      size_(context->size),
      options_(options),
      context_(std::move(context)),
      board_(&store, "gloo/", rank_, size_) {}

GlooCommunicator::~GlooCommunicator() {
  // Requests hold a reference to this communicator; they must be gone by now (contract).
  MutexLock lock(&mu_);
  HORA_CHECK(pending_.empty()) << pending_.size() << " gloo requests outlive their communicator";
}

std::string GlooCommunicator::describe() const {
  return "rank " + std::to_string(rank_) + " of " + std::to_string(size_);
}

Status GlooCommunicator::check_usable(const char* what, int peer) const {
  if (is_aborted()) return aborted_status("gloo", describe(), what);
  {
    MutexLock lock(&mu_);
    if (!broken_.ok()) return broken_status("gloo", describe(), what, broken_);
  }
  FailedRanks& failed = FailedRanks::process();
  if (!failed.any()) return Status::OK();
  Status known = peer >= 0 ? failed.failure_of(FailedRanks::global_rank(options_.members, peer))
                           : failed.check_collective(options_.members, size_, rank_, {});
  return known.ok() ? known : known.with_context(" (gloo: " + describe() + ": " + what + ")");
}

void GlooCommunicator::record_failed(int peer, const Status& cause) const {
  FailedRanks::process().record_member_timeout(options_.members, peer, cause);
}

Status GlooCommunicator::mark_broken(const Status& status) {
  {
    MutexLock lock(&mu_);
    if (!broken_.ok()) return status;
    broken_ = status;
  }
  if (is_aborted() || status.code() != StatusCode::kRemote) return status;
  // gloo sees only the pair that failed: a survivor whose neighbour gave up would blame the
  // neighbour. The board adds what the other ranks saw first-hand (failure_board.h).
  board_.post(status.message());
  std::string message = board_.collect(status.message(), std::chrono::milliseconds(1000));
  // At two ranks the pair that failed can only be the other rank's, which posted nothing (it
  // died, or its store went with it): name it.
  if (size() == 2 && !FailureBoard::has_reports(message))
    message += " (the peer, rank " + std::to_string(1 - rank()) + ", failed or left)";
  Status named(status.code(), message);
  MutexLock lock(&mu_);
  broken_ = named;
  return named;
}

void GlooCommunicator::track(GlooRequest* request) {
  MutexLock lock(&mu_);
  pending_.insert(request);
}

void GlooCommunicator::untrack(GlooRequest* request) {
  MutexLock lock(&mu_);
  pending_.erase(request);
}

std::chrono::milliseconds GlooCommunicator::timeout_for(Deadline deadline) const {
  auto cap = std::chrono::milliseconds(static_cast<int64_t>(options_.timeout_s * 1000.0));
  // gloo treats a negative timeout as "use the context's"; 0 is a valid immediate check.
  return std::max(std::chrono::milliseconds(0), std::min(deadline.remaining(), cap));
}

void GlooCommunicator::abort() {
  aborted_.store(true, std::memory_order_release);
  MutexLock lock(&mu_);
  for (GlooRequest* request : pending_) request->interrupt();
}

Status GlooCommunicator::validate_peer(int peer, const char* what) const {
  if (peer < 0 || peer >= size_ || peer == rank_)
    return Status::invalid_argument("gloo: " + describe() + ": " + what + " peer " +
                                    std::to_string(peer) + " is not another rank in [0, " +
                                    std::to_string(size_) + ")");
  return check_usable(what, peer);
}

StatusOr<std::unique_ptr<Request>> GlooCommunicator::isend(int peer, const void* data, size_t bytes,
                                                           uint32_t tag) {
  return post(true, peer, const_cast<void*>(data), bytes, tag);
}

StatusOr<std::unique_ptr<Request>> GlooCommunicator::irecv(int peer, void* data, size_t bytes,
                                                           uint32_t tag) {
  return post(false, peer, data, bytes, tag);
}

StatusOr<std::unique_ptr<Request>> GlooCommunicator::post(bool is_send, int peer, void* data,
                                                          size_t bytes, uint32_t tag) {
  const char* verb = is_send ? "send" : "recv";
  HORA_RETURN_IF_ERROR(validate_peer(peer, is_send ? "send to" : "recv from"));
  std::unique_ptr<::gloo::transport::UnboundBuffer> buffer;
  void* ptr = bytes == 0 ? empty_buffer() : data;
  Status status = gloo_call(verb, [&] {
    buffer = context_->createUnboundBuffer(ptr, bytes);
    if (is_send)
      buffer->send(peer, p2p_slot(tag), 0, bytes);
    else
      buffer->recv(peer, p2p_slot(tag), 0, bytes);
  });
  if (!status.ok()) {
    Status named = Status(status.code(), describe() + ": " + verb + (is_send ? " to" : " from") +
                                             " rank " + std::to_string(peer) + " (tag " +
                                             std::to_string(tag) + "): " + status.message());
    return mark_broken(named);
  }
  const auto kind = is_send ? GlooRequest::Kind::kSend : GlooRequest::Kind::kRecv;
  return std::unique_ptr<Request>(new GlooRequest(*this, std::move(buffer), kind, peer, tag));
}

// ---- GlooRequest --------------------------------------------------------------------------

GlooRequest::GlooRequest(GlooCommunicator& comm,
                         std::unique_ptr<::gloo::transport::UnboundBuffer> buffer, Kind kind,
                         int peer, uint32_t tag)
    : comm_(comm), buffer_(std::move(buffer)), kind_(kind), peer_(peer), tag_(tag) {
  comm_.track(this);
  // abort() may have run before track(): interrupt now so the wait cannot miss it.
  if (comm_.is_aborted()) interrupt();
}

GlooRequest::~GlooRequest() {
  // gloo refers to the buffer until the transfer ends. A request dropped unfinished gets an
  // immediate wait: if the transfer is not complete, gloo's timeout path cancels every
  // pending operation of the context (so the memory is no longer used) and the communicator
  // is broken from then on. Always wait() on a request.
  if (!done_) {
    HORA_LOG(kWarning) << "gloo: " << describe() << " destroyed without wait()";
    (void)wait(Deadline::after_seconds(0));
  }
  comm_.untrack(this);
}

std::string GlooRequest::describe() const {
  return comm_.describe() + ": " + (kind_ == Kind::kSend ? "send to" : "recv from") + " rank " +
         std::to_string(peer_) + " (tag " + std::to_string(tag_) + ", " +
         std::to_string(buffer_->size) + " bytes)";
}

void GlooRequest::interrupt() {
  if (kind_ == Kind::kSend)
    buffer_->abortWaitSend();
  else
    buffer_->abortWaitRecv();
}

Status GlooRequest::wait(Deadline deadline) {
  if (done_) return status_;
  const auto timeout = comm_.timeout_for(deadline);
  bool completed = false;
  Status status = gloo_call(describe(), [&] {
    int from = -1;
    completed = kind_ == Kind::kSend ? buffer_->waitSend(&from, timeout)
                                     : buffer_->waitRecv(&from, timeout);
  });
  if (status.ok() && !completed) {
    status = Status::remote("gloo: " + describe() + ": aborted");
  }
  if (status.code() == StatusCode::kTimeout) comm_.record_failed(peer_, status);
  if (!status.ok()) status = comm_.mark_broken(status);
  done_ = true;
  status_ = status;
  comm_.untrack(this);
  return status_;
}

}  // namespace gloo_backend

// ---- factory ------------------------------------------------------------------------------

StatusOr<std::unique_ptr<Communicator>> create_gloo_communicator(int rank, int size, Store& store,
                                                                 const GlooOptions& options,
                                                                 Deadline deadline) {
  if (size < 1 || rank < 0 || rank >= size)
    return Status::invalid_argument("gloo: rank " + std::to_string(rank) + " is not in [0, " +
                                    std::to_string(size) + ")");
  gloo_backend::ignore_sigpipe_unless_handled();
  HORA_ASSIGN_OR_RETURN(GlooBindAddress bind, choose_gloo_bind_address(options));
  const std::string where = "rank " + std::to_string(rank) + " of " + std::to_string(size) +
                            " connecting the full mesh (binding " +
                            (bind.iface.empty() ? bind.hostname : "interface " + bind.iface) + ")";
  std::shared_ptr<::gloo::rendezvous::Context> context;
  Status status = gloo_backend::gloo_call(where, [&] {
    ::gloo::transport::tcp::attr attr;
    attr.iface = bind.iface;
    attr.hostname = bind.hostname;
    auto device = ::gloo::transport::tcp::CreateDevice(attr);
    context = std::make_shared<::gloo::rendezvous::Context>(rank, size);
    auto timeout =
        std::min(deadline.remaining(),
                 std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000.0)));
    context->setTimeout(std::max(timeout, std::chrono::milliseconds(1)));
    gloo_backend::GlooStoreAdapter adapter(store, deadline);
    context->connectFullMesh(adapter, device);
    // Later waits get their own timeouts; the context's is the cap (HORA_TIMEOUT_S).
    context->setTimeout(
        std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000.0)));
  });
  if (!status.ok()) return status;
  return std::unique_ptr<Communicator>(new gloo_backend::GlooCommunicator(context, options, store));
}

}  // namespace collectives
}  // namespace hora
