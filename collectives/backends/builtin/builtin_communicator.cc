#include "collectives/backends/builtin/builtin_communicator.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include "collectives/backends/builtin/cpu_affinity.h"
#include "collectives/backends/builtin/loopback_link.h"
#include "collectives/backends/builtin/peer_engine.h"
#include "collectives/backends/builtin/process_liveness.h"
#include "collectives/backends/builtin/shm_allreduce.h"
#include "collectives/backends/builtin/shm_channel.h"
#include "collectives/backends/builtin/shm_exchange.h"
#include "collectives/backends/builtin/shm_segment.h"
#include "collectives/backends/builtin/shm_span_allreduce.h"
#include "collectives/backends/builtin/spin_budget.h"
#include "collectives/backends/builtin/tcp_transport.h"
#include "collectives/failed_ranks.h"
#include "core/base/host_identity.h"

namespace hora {
namespace collectives {
namespace builtin {
namespace {

using Clock = std::chrono::steady_clock;

// How long a wait on a live peer may make no progress at all, while some other member of the
// group is gone, before it gives up (lost_peers_status). Not at once: a rank that finished
// its last collective and shut down is gone too, while the live peer may still be about to
// deliver; five seconds of nothing moving on any link is no longer that.
constexpr auto kLostMemberGrace = std::chrono::seconds(5);

// CPUs this process may run on (its affinity mask), at least 1.
// The longest spin of ranks that share cores (cpu_affinity.h).
constexpr std::chrono::microseconds kSharedCoreSpin{10};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

std::string first_ipv4() {
  ifaddrs* list = nullptr;
  std::string found;
  if (getifaddrs(&list) != 0) return "127.0.0.1";
  for (ifaddrs* a = list; a != nullptr && found.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    auto* in = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
    if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) continue;
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
    found = ip;
  }
  freeifaddrs(list);
  return found.empty() ? "127.0.0.1" : found;
}

void init_segment(void* memory, size_t, void* arg) {
  init_shm_segment(memory, *static_cast<const ShmLayout*>(arg));
}

class BuiltinCommunicator;

class BuiltinRequest : public Request {
 public:
  BuiltinRequest(BuiltinCommunicator* comm, std::shared_ptr<Op> op)
      : comm_(comm), op_(std::move(op)) {}
  Status wait(Deadline deadline) override;

 private:
  BuiltinCommunicator* comm_;
  std::shared_ptr<Op> op_;
};

class BuiltinCommunicator : public Communicator {
 public:
  BuiltinCommunicator(int rank, int size, const BuiltinOptions& options)
      : rank_(rank), size_(size), options_(options), engines_(size) {
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  }
  ~BuiltinCommunicator() override {
    engines_.clear();  // links before the segment they point into
    exchange_.reset();
    bell_.reset();
    segment_.reset();
    if (wake_fd_ >= 0) close(wake_fd_);
  }

  Status init(Store& store);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend_name() const override { return "builtin"; }
  const char* cost_model() const override { return exchange_ ? "builtin-shm" : "builtin"; }

  StatusOr<std::unique_ptr<Request>> isend(int peer, const void* data, size_t bytes,
                                           uint32_t tag) override {
    return post(true, peer, const_cast<void*>(data), bytes, tag);
  }
  StatusOr<std::unique_ptr<Request>> irecv(int peer, void* data, size_t bytes,
                                           uint32_t tag) override {
    return post(false, peer, data, bytes, tag);
  }
  // Native allreduce, broadcast, allgatherv, reducescatter: single-copy through the shm
  // exchange when every rank is on this host (shm_allreduce.h); with one rank a copy; else
  // kUnimplemented (the Communicator defaults).
  Status allreduce(const void* in, void* out, size_t count, DataType dtype, ReduceOp op,
                   Deadline deadline) override {
    HORA_RETURN_IF_ERROR(check_reduce_op(op, dtype, "builtin: allreduce"));
    if (size_ == 1) {
      if (in != out && count > 0) std::memmove(out, in, count * data_type_bytes(dtype));
      return Status::OK();
    }
    if (!exchange_) return Communicator::allreduce(in, out, count, dtype, op, deadline);
    if (aborted_.load()) return aborted_status();
    return shm_allreduce(*exchange_, in, out, count, dtype, op, deadline, shm_options_);
  }
  // The shm exchange scales kAverage as it reduces (shm_reduce.h); every rank has it or none.
  bool has_allreduce_average() const override { return exchange_ != nullptr; }
  // Gather-list allreduce: through the shm exchange when every rank is on this host
  // (shm_span_allreduce.h), else kUnimplemented.
  bool has_allreduce_spans() const override { return exchange_ != nullptr; }
  Status allreduce_spans(const std::vector<ReduceSpan>& spans, DataType dtype, ReduceOp op,
                         double prescale, double postscale, Deadline deadline) override {
    if (!exchange_)
      return Communicator::allreduce_spans(spans, dtype, op, prescale, postscale, deadline);
    if (aborted_.load()) return aborted_status();
    return shm_allreduce_spans(*exchange_, spans, dtype, op, prescale, postscale, deadline,
                               shm_options_);
  }
  Status broadcast(void* buf, size_t count, DataType dtype, int root, Deadline deadline) override {
    if (size_ == 1 && root == 0) return Status::OK();
    if (!exchange_) return Communicator::broadcast(buf, count, dtype, root, deadline);
    if (aborted_.load()) return aborted_status();
    return shm_broadcast(*exchange_, buf, count, dtype, root, deadline);
  }
  Status allgatherv(const void* in, void* out, const std::vector<size_t>& counts, DataType dtype,
                    Deadline deadline) override {
    if (!exchange_ && size_ > 1) return Communicator::allgatherv(in, out, counts, dtype, deadline);
    if (aborted_.load()) return aborted_status();
    if (!exchange_) {  // one rank
      if (counts.size() != 1)
        return Status::invalid_argument("allgatherv: " + std::to_string(counts.size()) +
                                        " counts for 1 rank");
      if (in != out && counts[0] > 0) std::memmove(out, in, counts[0] * data_type_bytes(dtype));
      return Status::OK();
    }
    return shm_allgatherv(*exchange_, in, out, counts, dtype, deadline);
  }
  Status reducescatter(const void* in, void* out, const std::vector<size_t>& recv_counts,
                       DataType dtype, ReduceOp op, Deadline deadline) override {
    HORA_RETURN_IF_ERROR(check_reduce_op(op, dtype, "builtin: reducescatter"));
    if (!exchange_ && size_ > 1)
      return Communicator::reducescatter(in, out, recv_counts, dtype, op, deadline);
    if (aborted_.load()) return aborted_status();
    if (!exchange_) {  // one rank
      if (recv_counts.size() != 1)
        return Status::invalid_argument("reducescatter: " + std::to_string(recv_counts.size()) +
                                        " counts for 1 rank");
      if (in != out && recv_counts[0] > 0)
        std::memmove(out, in, recv_counts[0] * data_type_bytes(dtype));
      return Status::OK();
    }
    return shm_reducescatter(*exchange_, in, out, recv_counts, dtype, op, deadline);
  }
  void* shared_buffer(size_t bytes) override {
    if (!exchange_ || bytes == 0 || bytes > exchange_->shared_bytes()) return nullptr;
    return exchange_->shared(rank_);
  }

  void abort() override {
    aborted_.store(true);
    if (exchange_) exchange_->wake();
    if (bell_) bell_->ring();
    uint64_t one = 1;
    if (wake_fd_ >= 0 && write(wake_fd_, &one, sizeof one) < 0) {
    }
  }

  Status wait_op(Op& op, Deadline deadline);
  // `status` (a peer failure seen while waiting on `peer`) plus every other member the group
  // lost by now, so that a survivor that sees a neighbour leave because of a dead rank still
  // names the dead rank. Reads what the links hold (a closed connection shows) first.
  Status with_lost_peers(const Status& status, int peer);

 private:
  StatusOr<std::unique_ptr<Request>> post(bool is_send, int peer, void* data, size_t bytes,
                                          uint32_t tag);
  bool progress_all(bool allow_unexpected);
  void check_peers();
  Status lost_peers_status(const Op& op) const;
  void sleep_until_activity(Deadline deadline);
  Status timeout_status(const Op& op, Clock::time_point started) const;
  // init's steps, in order, each through the store within `deadline`:
  // The ranks on this host (same host id as this rank's), ascending.
  StatusOr<std::vector<int>> local_ranks(Store& store, Deadline deadline);
  // Sets yield_while_spinning_, max_spin_ and spin_budget_ from the local ranks' CPU masks
  // (exchanged when use_shm).
  Status choose_spin(Store& store, const std::vector<int>& local, bool use_shm, Deadline deadline);
  // Maps this host's shm segment and makes a PeerEngine over shm for every other local rank.
  Status connect_shm_links(Store& store, const std::vector<int>& local, Deadline deadline);
  // Establishes exchange_, the shared-memory collectives of a one-host job.
  Status establish_exchange(Store& store, Deadline deadline);
  // Makes a PeerEngine over TCP for every peer without one yet.
  Status connect_tcp_links(Store& store, bool one_host, Deadline deadline);

  Status aborted_status() const {
    return Status::remote("communicator of rank " + std::to_string(rank_) + " was aborted");
  }

  int rank_;
  int size_;
  BuiltinOptions options_;
  std::unique_ptr<ShmExchange> exchange_;  // null unless every rank is local and shm is on
  ShmCollectiveOptions shm_options_;
  std::unique_ptr<ShmSegment> segment_;
  std::unique_ptr<ShmDoorbell> bell_;
  std::vector<std::unique_ptr<PeerEngine>> engines_;
  std::atomic<bool> aborted_{false};
  bool yield_while_spinning_ = false;       // this host's ranks share cores (cpu_affinity.h)
  std::chrono::microseconds max_spin_{50};  // options' spin, less when ranks share cores
  SpinBudget spin_budget_;                  // wait_op's (spin_budget.h)
  int wake_fd_ = -1;
  std::vector<pollfd> pollfds_;
};

Status BuiltinRequest::wait(Deadline deadline) {
  Status status = op_->complete ? op_->status : comm_->wait_op(*op_, deadline);
  if (status.code() == StatusCode::kRemote) return comm_->with_lost_peers(status, op_->peer);
  return status;
}

StatusOr<std::vector<int>> BuiltinCommunicator::local_ranks(Store& store, Deadline deadline) {
  const std::string& prefix = options_.key_prefix;
  const std::string host = options_.host_id.empty() ? host_identity() : options_.host_id;
  HORA_RETURN_IF_ERROR(
      store.set(prefix + "host/" + std::to_string(rank_), Bytes(host.begin(), host.end())));
  std::vector<int> local;
  for (int r = 0; r < size_; ++r) {
    HORA_ASSIGN_OR_RETURN(Bytes v, store.get(prefix + "host/" + std::to_string(r), deadline));
    if (std::string(v.begin(), v.end()) == host) local.push_back(r);
  }
  return local;
}

Status BuiltinCommunicator::choose_spin(Store& store, const std::vector<int>& local, bool use_shm,
                                        Deadline deadline) {
  const std::string& prefix = options_.key_prefix;
  // Whether this host's ranks share cores: fewer CPUs in the union of their affinities than
  // ranks (4 ranks on 2 CPUs; two ranks bound to one core). Each rank bound to a core of its
  // own (mpirun --bind-to core) is not sharing, though each sees one CPU. Over TCP only
  // (HORA_SHM=0) no masks are exchanged: this rank's own mask against the local ranks.
  yield_while_spinning_ =
      ranks_share_cores(static_cast<int>(local.size()), union_cpus({affinity_text()}));
  if (use_shm) {
    const std::string mine = affinity_text();
    HORA_RETURN_IF_ERROR(
        store.set(prefix + "cpus/" + std::to_string(rank_), Bytes(mine.begin(), mine.end())));
    std::vector<std::string> masks;
    for (int r : local) {
      HORA_ASSIGN_OR_RETURN(Bytes v, store.get(prefix + "cpus/" + std::to_string(r), deadline));
      masks.emplace_back(v.begin(), v.end());
    }
    yield_while_spinning_ = ranks_share_cores(static_cast<int>(local.size()), union_cpus(masks));
  }
  // Ranks that share cores spin at most kSharedCoreSpin: a longer spin only keeps the core
  // from the peer it waits for.
  max_spin_ = yield_while_spinning_ ? std::min(options_.spin, kSharedCoreSpin) : options_.spin;
  spin_budget_ = SpinBudget(max_spin_);
  return Status::OK();
}

Status BuiltinCommunicator::connect_shm_links(Store& store, const std::vector<int>& local,
                                              Deadline deadline) {
  const int local_size = static_cast<int>(local.size());
  if (local_size > kShmMaxLocalRanks)
    return Status::invalid_argument("shared-memory transport supports at most " +
                                    std::to_string(kShmMaxLocalRanks) + " ranks per host, got " +
                                    std::to_string(local_size) + " (set HORA_SHM=0)");
  const int me = static_cast<int>(std::find(local.begin(), local.end(), rank_) - local.begin());
  ShmLayout layout = ShmLayout::make(local_size, options_.shm_ring_bytes, options_.shm_chunk_bytes);
  HORA_ASSIGN_OR_RETURN(
      segment_, establish_shm_segment(
                    store, options_.key_prefix + "shm/" + std::to_string(local[0]) + "/", me == 0,
                    local_size, layout.total_bytes, &init_segment, &layout, deadline));
  HORA_RETURN_IF_ERROR(attach_shm_segment(segment_->data(), layout, me));
  bell_ = std::make_unique<ShmDoorbell>(segment_->data(), layout, me);
  for (int i = 0; i < local_size; ++i) {
    if (i == me) continue;
    engines_[local[i]] = std::make_unique<PeerEngine>(
        rank_, local[i], std::make_unique<ShmLink>(segment_->data(), layout, me, i, local[i]),
        options_.max_message_bytes);
  }
  return Status::OK();
}

Status BuiltinCommunicator::establish_exchange(Store& store, Deadline deadline) {
  ShmExchangeOptions xo;
  if (options_.shm_exchange_slot_bytes != 0) xo.slot_bytes = options_.shm_exchange_slot_bytes;
  xo.shared_bytes = options_.shm_shared_bytes;
  xo.spin = max_spin_;
  xo.yield_while_spinning = yield_while_spinning_;
  xo.liveness_interval = options_.liveness_interval;
  xo.members = options_.members;
  HORA_ASSIGN_OR_RETURN(exchange_, ShmExchange::establish(store, options_.key_prefix + "xchg/",
                                                          rank_, size_, xo, &aborted_, deadline));
  shm_options_.small_bytes = options_.shm_small_bytes;
  return Status::OK();
}

Status BuiltinCommunicator::connect_tcp_links(Store& store, bool one_host, Deadline deadline) {
  std::vector<int> tcp_peers;
  for (int r = 0; r < size_; ++r)
    if (r != rank_ && !engines_[r]) tcp_peers.push_back(r);
  if (tcp_peers.empty()) return Status::OK();
  TcpMeshOptions tcp;
  tcp.secret = options_.secret;
  tcp.bind_host = !options_.tcp_bind_host.empty() ? options_.tcp_bind_host
                                                  : (one_host ? "127.0.0.1" : "0.0.0.0");
  tcp.advertise_host = !options_.tcp_advertise_host.empty()
                           ? options_.tcp_advertise_host
                           : (one_host ? "127.0.0.1" : first_ipv4());
  tcp.socket_buffer_bytes = options_.tcp_buffer_bytes;
  HORA_ASSIGN_OR_RETURN(auto links, connect_tcp_mesh(store, options_.key_prefix, rank_, size_,
                                                     tcp_peers, tcp, deadline));
  for (int r : tcp_peers)
    engines_[r] =
        std::make_unique<PeerEngine>(rank_, r, std::move(links[r]), options_.max_message_bytes);
  return Status::OK();
}

Status BuiltinCommunicator::init(Store& store) {
  const Deadline deadline = Deadline::after_seconds(options_.timeout_s);
  HORA_ASSIGN_OR_RETURN(const std::vector<int> local, local_ranks(store, deadline));
  const bool one_host = local.size() == static_cast<size_t>(size_);
  const bool use_shm = options_.shm_enabled && local.size() > 1;
  HORA_RETURN_IF_ERROR(choose_spin(store, local, use_shm, deadline));
  if (use_shm) HORA_RETURN_IF_ERROR(connect_shm_links(store, local, deadline));
  if (use_shm && one_host && options_.shm_collectives)
    HORA_RETURN_IF_ERROR(establish_exchange(store, deadline));
  HORA_RETURN_IF_ERROR(connect_tcp_links(store, one_host, deadline));
  engines_[rank_] = std::make_unique<PeerEngine>(rank_, rank_, std::make_unique<LoopbackLink>(),
                                                 options_.max_message_bytes);
  return Status::OK();
}

StatusOr<std::unique_ptr<Request>> BuiltinCommunicator::post(bool is_send, int peer, void* data,
                                                             size_t bytes, uint32_t tag) {
  if (peer < 0 || peer >= size_)
    return Status::invalid_argument("rank " + std::to_string(rank_) + ": peer " +
                                    std::to_string(peer) + " is out of range [0, " +
                                    std::to_string(size_) + ")");
  if (bytes > 0 && data == nullptr)
    return Status::invalid_argument("null buffer for " + std::to_string(bytes) + " bytes");
  if (bytes > options_.max_message_bytes)
    return Status::invalid_argument("message of " + std::to_string(bytes) +
                                    " bytes exceeds the builtin limit of " +
                                    std::to_string(options_.max_message_bytes));
  auto op = std::make_shared<Op>();
  op->is_send = is_send;
  op->peer = peer;
  op->tag = tag;
  op->bytes = bytes;
  if (is_send)
    op->src = static_cast<const uint8_t*>(data);
  else
    op->dst = static_cast<uint8_t*>(data);
  if (aborted_.load()) {
    op->complete = true;
    op->status = Status::remote("communicator of rank " + std::to_string(rank_) + " was aborted");
  } else if (is_send) {
    engines_[peer]->post_send(op);
    // Start at once: a small message usually leaves here, and one whose request is never
    // waited on still goes out on the next wait.
    engines_[peer]->progress(false);
  } else {
    engines_[peer]->post_recv(op);
  }
  return std::unique_ptr<Request>(new BuiltinRequest(this, std::move(op)));
}

bool BuiltinCommunicator::progress_all(bool allow_unexpected) {
  bool moved = false;
  for (auto& e : engines_) {
    if (allow_unexpected || e->pending()) moved |= e->progress(allow_unexpected);
  }
  return moved;
}

// Every peer, not only those this rank has operations with: in a collective a rank usually
// waits on a live neighbour that is itself stuck behind the dead one (or left because of it),
// so only a look at every member lets each survivor name the rank that died.
void BuiltinCommunicator::check_peers() {
  for (auto& e : engines_) {
    if (e->broken()) continue;
    Status st = e->link().check_alive();
    if (st.ok()) continue;
    FailedRanks::process().record_member(options_.members, e->peer(), st);  // its process is gone
    e->fail(st);
  }
}

void BuiltinCommunicator::sleep_until_activity(Deadline deadline) {
  bool shm_pending = false;
  pollfds_.clear();
  pollfds_.push_back(pollfd{wake_fd_, POLLIN, 0});
  for (auto& e : engines_) {
    if (!e->pending()) continue;
    int fd = e->link().fd();
    if (fd >= 0) {
      // POLLIN too for a pending send: the peer may be sending to us (buffered when idle) and
      // a closed connection shows up as readable.
      short events = POLLIN;
      if (e->sending()) events |= POLLOUT;
      pollfds_.push_back(pollfd{fd, events, 0});
    } else if (std::string(e->link().kind()) == "shm") {
      shm_pending = true;
    }
  }
  auto cap = std::min<std::chrono::microseconds>(
      std::chrono::duration_cast<std::chrono::microseconds>(options_.liveness_interval),
      std::chrono::duration_cast<std::chrono::microseconds>(deadline.at() - Clock::now()));
  if (cap.count() <= 0) return;
  if (pollfds_.size() == 1 && shm_pending && bell_) {
    uint32_t seq = bell_->arm();
    if (!aborted_.load() && !progress_all(true)) bell_->sleep(seq, cap);
    bell_->disarm();
    return;
  }
  // TCP (or nothing) pending. With shm pending as well, poll in short slices.
  int timeout_ms = shm_pending ? 1 : static_cast<int>(std::max<int64_t>(1, cap.count() / 1000));
  int rc = poll(pollfds_.data(), pollfds_.size(), timeout_ms);
  if (rc > 0 && (pollfds_[0].revents & POLLIN)) {
    uint64_t v;
    if (read(wake_fd_, &v, sizeof v) < 0) {
    }
  }
}

Status BuiltinCommunicator::timeout_status(const Op& op, Clock::time_point started) const {
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.3f",
                std::chrono::duration<double>(Clock::now() - started).count());
  size_t done =
      op.is_send ? (op.done > kFrameHeaderBytes ? op.done - kFrameHeaderBytes : 0) : op.done;
  return Status::timeout("rank " + std::to_string(rank_) + " timed out after " + secs +
                         " s waiting for rank " + std::to_string(op.peer) + ": " +
                         (op.is_send ? "send" : "recv") + " of " + std::to_string(op.bytes) +
                         " bytes with tag " + std::to_string(op.tag) + " (" + std::to_string(done) +
                         " moved) over " + engines_[op.peer]->link().kind());
}

// A member of the group is gone (its process died, its connection closed, its link broke):
// the collective this wait belongs to can never complete, so after kLostMemberGrace without
// progress the wait fails (and with_lost_peers names every lost member) rather than timing
// out on a live peer that waits for it too.
Status BuiltinCommunicator::lost_peers_status(const Op& op) const {
  for (const auto& e : engines_) {
    if (!e->broken()) continue;
    return Status::remote("rank " + std::to_string(rank_) + " gave up its " +
                          (op.is_send ? "send to" : "recv from") + " rank " +
                          std::to_string(op.peer) + ": the group lost a member");
  }
  return Status::OK();
}

Status BuiltinCommunicator::with_lost_peers(const Status& status, int peer) {
  if (aborted_.load()) return status;
  progress_all(true);
  check_peers();
  std::string lost;
  for (const auto& e : engines_) {
    if (!e->broken() || e->peer() == peer) continue;
    lost += (lost.empty() ? "" : "; ") + e->broken_status().message();
  }
  if (lost.empty()) return status;
  return status.with_context("(members lost by now: " + lost + ")");
}

Status BuiltinCommunicator::wait_op(Op& op, Deadline deadline) {
  const auto started = Clock::now();
  auto last_progress = started;
  auto last_check = started;
  auto last_poll = started;
  uint32_t idle_spins = 0;
  bool waited = false, slept = false;  // the spin budget learns which ended the wait
  auto finish = [&]() -> Status {
    if (waited && !slept) spin_budget_.on_spun();
    return op.status;
  };
  for (;;) {
    if (op.complete) return finish();
    if (aborted_.load())
      return Status::remote("communicator of rank " + std::to_string(rank_) +
                            " was aborted while waiting for rank " + std::to_string(op.peer));
    bool moved = progress_all(false);
    if (op.complete) return finish();
    if (!moved) moved = progress_all(true);
    auto now = Clock::now();
    // A long gap between two polls: this spinner lost its core; sleep rather than spin on.
    const bool lost_core = !slept && spin_budget_.preempted(now - last_poll);
    last_poll = now;
    if (!waited) spin_budget_.begin_wait();
    waited = true;
    if (moved) {
      last_progress = now;
      continue;
    }
    if (now >= deadline.at()) {
      Status late = timeout_status(op, started);
      // A peer that runs is alive and most likely waits on another rank itself: not blamed.
      if (process_may_be_blamed(engines_[op.peer]->link().peer_pid()))
        FailedRanks::process().record_member_timeout(options_.members, op.peer, late);
      return late;
    }
    if (!lost_core && now - last_progress < spin_budget_.current()) {
      // Yield now and then when this host has more ranks than CPUs: a spin that keeps the
      // core delays the peer it waits for (see ShmExchange::arrive_and_wait for why not
      // always).
      if (yield_while_spinning_ && (++idle_spins & 31) == 0) {
        sched_yield();
      } else {
        cpu_relax();
      }
      continue;
    }
    if (now - last_check >= options_.liveness_interval) {
      last_check = now;
      check_peers();
      if (op.complete) return finish();
      // The peer found failed by another wait (or another rank): no second deadline on it.
      Status known = FailedRanks::process().check_wait(options_.members, op.peer, now - started);
      if (!known.ok()) return known;
      if (now - last_progress >= kLostMemberGrace) {
        Status lost = lost_peers_status(op);
        if (!lost.ok()) return lost;
      }
      continue;
    }
    if (!slept) {
      slept = true;
      spin_budget_.on_slept();
    }
    sleep_until_activity(
        Deadline(std::min(deadline.at(), last_check + options_.liveness_interval)));
  }
}

}  // namespace
}  // namespace builtin

StatusOr<std::unique_ptr<Communicator>> make_builtin_communicator(int rank, int size, Store& store,
                                                                  const BuiltinOptions& options) {
  if (size < 1 || rank < 0 || rank >= size)
    return Status::invalid_argument("builtin communicator: rank " + std::to_string(rank) +
                                    " of size " + std::to_string(size) + " is out of range");
  auto comm = std::make_unique<builtin::BuiltinCommunicator>(rank, size, options);
  HORA_RETURN_IF_ERROR(comm->init(store));
  return std::unique_ptr<Communicator>(std::move(comm));
}

}  // namespace collectives
}  // namespace hora
