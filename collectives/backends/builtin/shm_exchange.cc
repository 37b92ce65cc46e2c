#include "collectives/backends/builtin/shm_exchange.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "collectives/backends/builtin/process_liveness.h"
#include "collectives/failed_ranks.h"

namespace hora {
namespace collectives {
namespace builtin {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kExchangeMagic = 0x484f524158434831ull;  // "HORAXCH1"
constexpr size_t kPage = 4096;
// Steps using less of a slot than this always use its start (ShmExchange::slot): writing a few
// lines a peer holds costs less there than fetching lines this core no longer holds (at two
// ranks, 256 B took 0.26 us from the start, 0.29 us rotated; 512 B the same; 1 KiB 0.41 and
// 0.33 us).
constexpr size_t kRotateFrom = 1024;

struct Header {
  uint64_t magic;
  uint64_t size;
  uint64_t slot_bytes;
  uint64_t shared_bytes;
};

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

struct Layout {
  size_t slot_bytes;
  size_t shared_bytes;
  size_t region_bytes;
  size_t control_offset;
  size_t data_offset;
  size_t total_bytes;
};

Layout layout_of(int size, const ShmExchangeOptions& o) {
  Layout l;
  l.slot_bytes = round_up(std::max<size_t>(o.slot_bytes, 64), kPage);
  l.shared_bytes = round_up(o.shared_bytes, kPage);
  l.region_bytes = 2 * l.slot_bytes + l.shared_bytes;
  l.control_offset = kPage;
  l.data_offset = l.control_offset + kPage * static_cast<size_t>(size);
  l.total_bytes = l.data_offset + l.region_bytes * static_cast<size_t>(size);
  return l;
}

struct InitArg {
  int size;
  Layout layout;
};

void init_exchange(void* memory, size_t, void* arg) {
  auto* a = static_cast<const InitArg*>(arg);
  auto* h = static_cast<Header*>(memory);
  h->size = static_cast<uint64_t>(a->size);
  h->slot_bytes = a->layout.slot_bytes;
  h->shared_bytes = a->layout.shared_bytes;
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kExchangeMagic;
}

std::string rank_list(const std::string& prefix, const std::vector<int>& ranks) {
  std::string s = prefix;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

}  // namespace

// One rank's control block, each hot word on its own cache line (false sharing would make
// every arrival invalidate the flags its peers poll).
struct ShmExchange::Control {
  alignas(128) std::atomic<uint64_t> arrive;
  alignas(128) std::atomic<uint32_t> futex;
  std::atomic<uint32_t> waiting;
  alignas(128) std::atomic<uint32_t> failed;
  std::atomic<int32_t> pid;
  std::atomic<int64_t> source;
};
static_assert(sizeof(ShmExchange::Control) <= kPage, "exchange control must fit one page");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "exchange words must be lock-free");

StatusOr<std::unique_ptr<ShmExchange>> ShmExchange::establish(
    Store& store, const std::string& key_prefix, int rank, int size,
    const ShmExchangeOptions& options, const std::atomic<bool>* aborted, Deadline deadline) {
  InitArg arg{size, layout_of(size, options)};
  HORA_ASSIGN_OR_RETURN(
      auto segment, establish_shm_segment(store, key_prefix, rank == 0, size,
                                          arg.layout.total_bytes, &init_exchange, &arg, deadline));
  const auto* h = static_cast<const Header*>(segment->data());
  if (h->magic != kExchangeMagic || h->size != static_cast<uint64_t>(size) ||
      h->slot_bytes != arg.layout.slot_bytes || h->shared_bytes != arg.layout.shared_bytes) {
    return Status::mismatch(
        "rank " + std::to_string(rank) + ": shared-memory exchange header disagrees: size " +
        std::to_string(h->size) + " vs " + std::to_string(size) + ", slot_bytes " +
        std::to_string(h->slot_bytes) + " vs " + std::to_string(arg.layout.slot_bytes) +
        ", shared_bytes " + std::to_string(h->shared_bytes) + " vs " +
        std::to_string(arg.layout.shared_bytes) + " (ranks disagree about the options)");
  }
  ShmExchangeOptions o = options;
  o.slot_bytes = arg.layout.slot_bytes;
  o.shared_bytes = arg.layout.shared_bytes;
  std::unique_ptr<ShmExchange> x(new ShmExchange(rank, size, o, std::move(segment), aborted));
  x->control(rank)->pid.store(static_cast<int32_t>(getpid()), std::memory_order_release);
  return x;
}

ShmExchange::ShmExchange(int rank, int size, const ShmExchangeOptions& options,
                         std::unique_ptr<ShmSegment> segment, const std::atomic<bool>* aborted)
    : rank_(rank),
      size_(size),
      slot_bytes_(options.slot_bytes),
      shared_bytes_(options.shared_bytes),
      region_bytes_(2 * options.slot_bytes + options.shared_bytes),
      spin_budget_(options.spin),
      yield_while_spinning_(options.yield_while_spinning),
      liveness_interval_(options.liveness_interval),
      members_(options.members),
      segment_(std::move(segment)),
      aborted_(aborted) {}

ShmExchange::~ShmExchange() = default;

ShmExchange::Control* ShmExchange::control(int r) const {
  return reinterpret_cast<Control*>(static_cast<uint8_t*>(segment_->data()) + kPage +
                                    kPage * static_cast<size_t>(r));
}

uint8_t* ShmExchange::slot(int r, uint64_t step) const {
  auto* base = static_cast<uint8_t*>(segment_->data()) + kPage + kPage * static_cast<size_t>(size_);
  return base + region_bytes_ * static_cast<size_t>(r) + (step & 1) * slot_bytes_;
}

uint8_t* ShmExchange::slot(int r, uint64_t step, size_t bytes) const {
  if (bytes < kRotateFrom) return slot(r, step);
  const size_t window = round_up(bytes, kPage);
  const size_t windows = slot_bytes_ / window;
  if (windows < 2) return slot(r, step);
  // A slot serves every other step (step & 1): count its own uses.
  return slot(r, step) + static_cast<size_t>((step >> 1) % windows) * window;
}

uint8_t* ShmExchange::shared(int r) const {
  if (shared_bytes_ == 0) return nullptr;
  return slot(r, 0) + 2 * slot_bytes_;
}

int64_t ShmExchange::shared_offset_of(const void* data, size_t bytes) const {
  const uint8_t* base = shared(rank_);
  const auto* p = static_cast<const uint8_t*>(data);
  if (base == nullptr || p < base || p >= base + shared_bytes_ ||
      bytes > static_cast<size_t>(base + shared_bytes_ - p))
    return -1;
  return p - base;
}

void ShmExchange::publish_source(int64_t offset) {
  control(rank_)->source.store(offset, std::memory_order_relaxed);
}

int64_t ShmExchange::source_of(int r) const {
  return control(r)->source.load(std::memory_order_relaxed);
}

void ShmExchange::wake() {
  Control* c = control(rank_);
  c->futex.fetch_add(1, std::memory_order_seq_cst);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&c->futex), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

Status ShmExchange::fail(Status status, int culprit) {
  failure_ = status;
  control(rank_)->failed.store(static_cast<uint32_t>(culprit + 1), std::memory_order_release);
  // Peers asleep on us wake now and see the flag.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    Control* c = control(p);
    c->futex.fetch_add(1, std::memory_order_seq_cst);
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&c->futex), FUTEX_WAKE, 1, nullptr, nullptr, 0);
  }
  return status;
}

Status ShmExchange::check_peers(uint64_t seq, const char* what, int* culprit) {
  // A dead process first: it is the cause, and the peers that failed because of it name it.
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    Control* c = control(p);
    if (c->arrive.load(std::memory_order_acquire) >= seq) continue;
    int32_t pid = c->pid.load(std::memory_order_acquire);
    if (process_is_gone(pid)) {
      *culprit = p;
      Status gone =
          Status::remote("rank " + std::to_string(rank_) + ": rank " + std::to_string(p) +
                         " (pid " + std::to_string(pid) + ") died during the shared-memory " +
                         what + ": its process is gone");
      FailedRanks::process().record_member(members_, p, gone);
      return gone;
    }
  }
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    Control* c = control(p);
    if (c->arrive.load(std::memory_order_acquire) >= seq) continue;
    uint32_t failed = c->failed.load(std::memory_order_acquire);
    if (failed == 0) continue;
    const int cause = static_cast<int>(failed) - 1;
    *culprit = cause;
    std::string why =
        cause == p ? "" : " because rank " + std::to_string(cause) + " failed or died";
    return Status::remote("rank " + std::to_string(rank_) + ": rank " + std::to_string(p) +
                          " failed during the shared-memory " + what + why +
                          " (its own error names the cause)");
  }
  return Status::OK();
}

void ShmExchange::wake_sleeping_peers() {
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    Control* c = control(p);
    if (c->waiting.load(std::memory_order_relaxed) == 0) continue;
    c->futex.fetch_add(1, std::memory_order_seq_cst);
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&c->futex), FUTEX_WAKE, 1, nullptr, nullptr, 0);
  }
}

bool ShmExchange::all_arrived(uint64_t seq) const {
  for (int p = 0; p < size_; ++p)
    if (control(p)->arrive.load(std::memory_order_acquire) < seq) return false;
  return true;
}

Status ShmExchange::time_out(uint64_t seq, const char* what, Clock::duration waited) {
  std::vector<int> missing;
  for (int p = 0; p < size_; ++p)
    if (control(p)->arrive.load(std::memory_order_acquire) < seq) missing.push_back(p);
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.3f", std::chrono::duration<double>(waited).count());
  Status status =
      Status::timeout("rank " + std::to_string(rank_) + " timed out after " + secs +
                      " s in the shared-memory " + what + " (sync point " + std::to_string(seq) +
                      ")" + rank_list(", waiting for rank(s) ", missing));
  // A missing rank whose process runs is alive and most likely waits elsewhere: not blamed.
  for (int p : missing)
    if (process_may_be_blamed(control(p)->pid.load(std::memory_order_acquire)))
      FailedRanks::process().record_member_timeout(members_, p, status);
  return fail(status, rank_);
}

Status ShmExchange::known_failure(uint64_t seq, Clock::duration waited, int* culprit) {
  FailedRanks& failed = FailedRanks::process();
  failed.poll_store(waited);
  if (!failed.any()) return Status::OK();
  for (int p = 0; p < size_; ++p) {
    if (p == rank_ || control(p)->arrive.load(std::memory_order_acquire) >= seq) continue;
    Status known = failed.failure_of(FailedRanks::global_rank(members_, p));
    if (known.ok()) continue;
    *culprit = p;
    return known;
  }
  return Status::OK();
}

void ShmExchange::sleep_until_woken(uint64_t seq, int64_t cap_us) {
  Control* me = control(rank_);
  uint32_t word = me->futex.load(std::memory_order_relaxed);
  me->waiting.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!all_arrived(seq) && !(aborted_ != nullptr && aborted_->load())) {
    struct timespec ts;
    ts.tv_sec = static_cast<time_t>(cap_us / 1000000);
    ts.tv_nsec = static_cast<long>((cap_us % 1000000) * 1000);
    // Not FUTEX_PRIVATE: the word is shared between processes.
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&me->futex), FUTEX_WAIT, word, &ts, nullptr, 0);
  }
  me->waiting.store(0, std::memory_order_relaxed);
}

Status ShmExchange::arrive_and_wait(Deadline deadline, const char* what) {
  if (!failure_.ok()) return failure_;
  const uint64_t seq = ++seq_;
  control(rank_)->arrive.store(seq, std::memory_order_release);
  // Wake peers that sleep (the fence pairs with the one after a sleeper sets `waiting`).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  wake_sleeping_peers();
  if (all_arrived(seq)) return Status::OK();
  const auto started = Clock::now();
  auto last_check = started;
  auto last_poll = started;
  bool slept = false;  // spin, then sleep (spin_budget.h): the budget learns which ended it
  spin_budget_.begin_wait();
  for (uint32_t spins = 0;; ++spins) {
    if (all_arrived(seq)) {
      if (!slept) spin_budget_.on_spun();
      return Status::OK();
    }
    if ((spins & 63) != 0) {
      cpu_relax();
      continue;
    }
    // With more ranks than CPUs a spin that keeps the core delays the very peer it waits for
    // (4 ranks on 2 CPUs: 8 B allreduce 125 -> 11 us). With a CPU per rank it must not yield:
    // beside a rank's own busy threads (BLAS in backward) the wait would lose its core to
    // them and overlapped communication would stall (a 2-rank trainer's wait after backward
    // went from 11 to 29 ms).
    if (yield_while_spinning_) sched_yield();
    const auto now = Clock::now();
    // A long gap between two polls: this spinner lost its core; sleep rather than spin on.
    const bool lost_core = !slept && spin_budget_.preempted(now - last_poll);
    last_poll = now;
    if (aborted_ != nullptr && aborted_->load(std::memory_order_relaxed))
      return fail(Status::remote("communicator of rank " + std::to_string(rank_) +
                                 " was aborted during the shared-memory " + what),
                  rank_);
    // Peers' failure flags every 64 spins (cheap loads); their processes every interval.
    bool check = now - last_check >= liveness_interval_;
    for (int p = 0; p < size_ && !check; ++p)
      check = p != rank_ && control(p)->failed.load(std::memory_order_relaxed) != 0;
    if (check) {
      last_check = now;
      int culprit = rank_;
      Status st = check_peers(seq, what, &culprit);
      if (st.ok()) st = known_failure(seq, now - started, &culprit);
      if (!st.ok()) return fail(st, culprit);
    }
    if (now >= deadline.at()) return time_out(seq, what, now - started);
    if (!lost_core && !slept && now - started < spin_budget_.current()) continue;
    if (!slept) {
      slept = true;
      spin_budget_.on_slept();
    }
    // Sleep until a peer arrives, the next liveness check or the deadline.
    auto cap = std::min(deadline.at(), last_check + liveness_interval_) - now;
    auto cap_us = std::chrono::duration_cast<std::chrono::microseconds>(cap).count();
    if (cap_us > 0) sleep_until_woken(seq, cap_us);
  }
}

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
