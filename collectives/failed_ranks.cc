#include "collectives/failed_ranks.h"

#include <algorithm>
#include <thread>

#include "core/base/deadline.h"

namespace hora {
namespace collectives {
namespace {
using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kPostWait{500};
constexpr std::chrono::milliseconds kPollAfter{1000};
constexpr std::chrono::milliseconds kPollEvery{100};
constexpr std::chrono::milliseconds kPollWait{100};
constexpr size_t kMaxText = 600;
// What announce_leaving() posts after "rank R ": how a reader tells a rank that left on purpose.
constexpr const char* kLeftMarker = "left the generation: ";

std::string dead_key(const std::string& prefix, int rank) {
  return prefix + "dead/" + std::to_string(rank);
}
}  // namespace

FailedRanks& FailedRanks::process() {
  // The one process-wide instance: every communicator and engine of the job shares it. Never
  // destroyed (as core/hora.cc's Runtime): an engine thread still running while the process
  // exits without hora::shutdown may use it.
  static FailedRanks* const registry = new FailedRanks();
  return *registry;
}

void FailedRanks::begin(int64_t generation, Store* store, const std::string& prefix, int self,
                        int size) {
  MutexLock store_lock(&store_mu_);
  MutexLock lock(&mu_);
  ranks_.clear();
  causes_.clear();
  left_.clear();
  count_.store(0, std::memory_order_relaxed);
  low_.store(0, std::memory_order_relaxed);
  generation_ = generation;
  self_ = self;
  size_ = size;
  store_ = store;
  prefix_ = prefix;
  last_poll_ = Clock::time_point();
}

void FailedRanks::end() {
  MutexLock store_lock(&store_mu_);
  store_ = nullptr;
}

bool FailedRanks::contains(int rank) const {
  if (!any() || rank < 0) return false;
  if (rank < 64) return (low_.load(std::memory_order_acquire) >> rank & 1) != 0;
  MutexLock lock(&mu_);
  return std::find(ranks_.begin(), ranks_.end(), rank) != ranks_.end();
}

bool FailedRanks::insert(int rank, const Status& cause) {
  MutexLock lock(&mu_);
  if (rank < 0 || rank >= size_ || rank == self_ || cause.ok()) return false;
  if (std::find(ranks_.begin(), ranks_.end(), rank) != ranks_.end()) return false;
  ranks_.push_back(rank);
  causes_.push_back(cause);
  if (rank < 64) low_.fetch_or(uint64_t{1} << rank, std::memory_order_release);
  count_.fetch_add(1, std::memory_order_release);
  return true;
}

bool FailedRanks::record(int rank, const Status& cause) {
  if (!insert(rank, cause)) return false;
  post(rank, cause.to_string());
  return true;
}

bool FailedRanks::record_timeout(int rank, const Status& cause, std::chrono::milliseconds grace) {
  const Deadline until = Deadline::after(grace);
  for (;;) {
    {
      MutexLock store_lock(&store_mu_);
      poll_locked(false);
    }
    {
      MutexLock lock(&mu_);
      for (int known : ranks_)
        if (known != rank) return false;  // rank most likely waits on that one
    }
    if (until.expired()) return record(rank, cause);
    std::this_thread::sleep_for(std::min<Clock::duration>(kPollEvery, until.remaining()));
  }
}

void FailedRanks::post(int rank, const std::string& text) {
  MutexLock store_lock(&store_mu_);
  if (store_ == nullptr) return;
  const std::string value = text.size() > kMaxText ? text.substr(0, kMaxText) + "..." : text;
  // Best effort: a store that is gone (its host was the failed rank) leaves the other
  // processes to their own deadlines, which still fire.
  store_
      ->set_until(dead_key(prefix_, rank), Bytes(value.begin(), value.end()),
                  Deadline::after(kPostWait))
      .IgnoreError();
}

void FailedRanks::announce_leaving(const std::string& why) {
  int self;
  {
    MutexLock lock(&mu_);
    self = self_;
  }
  if (self >= 0) post(self, "rank " + std::to_string(self) + " " + kLeftMarker + why);
}

Status FailedRanks::failure_of(int rank) const {
  if (!contains(rank)) return Status::OK();
  MutexLock lock(&mu_);
  for (size_t i = 0; i < ranks_.size(); ++i) {
    if (ranks_[i] != rank) continue;
    return Status(causes_[i].code(),
                  "rank " + std::to_string(self_) + " stopped waiting for rank " +
                      std::to_string(rank) +
                      ", already found failed in this job: " + causes_[i].message());
  }
  return Status::OK();
}

int FailedRanks::global_rank(const std::vector<int>& members, int rank) {
  if (members.empty()) return rank;
  return rank >= 0 && rank < static_cast<int>(members.size()) ? members[rank] : -1;
}

Status FailedRanks::check_wait(const std::vector<int>& members, int rank, Clock::duration waited) {
  poll_store(waited);
  if (!any()) return Status::OK();
  return failure_of(global_rank(members, rank));
}

Status FailedRanks::check_collective(const std::vector<int>& members, int size, int self,
                                     Clock::duration waited) {
  poll_store(waited);
  if (!any()) return Status::OK();
  for (int r = 0; r < size; ++r) {
    if (r == self) continue;
    Status known = failure_of(global_rank(members, r));
    if (!known.ok()) return known;
  }
  return Status::OK();
}

std::vector<int> FailedRanks::ranks() const {
  MutexLock lock(&mu_);
  std::vector<int> sorted = ranks_;
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

std::vector<int> FailedRanks::culprits() const {
  MutexLock lock(&mu_);
  std::vector<int> out;
  for (int r : ranks_)
    if (std::find(left_.begin(), left_.end(), r) == left_.end()) out.push_back(r);
  std::sort(out.begin(), out.end());
  return out;
}

Status FailedRanks::first_failure() const {
  MutexLock lock(&mu_);
  return causes_.empty() ? Status::OK() : causes_.front();
}

int64_t FailedRanks::generation() const {
  MutexLock lock(&mu_);
  return generation_;
}

bool FailedRanks::poll_store(Clock::duration waited) {
  if (waited < kPollAfter) return false;
  if (!store_mu_.try_lock()) return false;  // another wait is polling for this process
  const bool found = poll_locked(true);
  store_mu_.unlock();
  return found;
}

bool FailedRanks::poll_locked(bool rate_limited) {
  const auto now = Clock::now();
  if (store_ == nullptr || (rate_limited && now - last_poll_ < kPollEvery)) return false;
  last_poll_ = now;
  int self, size;
  {
    MutexLock lock(&mu_);
    self = self_;
    size = size_;
  }
  bool found = false;
  const Deadline deadline = Deadline::after(kPollWait);
  for (int r = 0; r < size && !deadline.expired(); ++r) {
    if (r == self || contains(r)) continue;
    const std::string key = dead_key(prefix_, r);
    StatusOr<bool> there = store_->check_until({key}, deadline);
    if (!there.ok()) break;  // the store is gone or slow: the wait's own deadline still runs
    if (!*there) continue;
    StatusOr<Bytes> value = store_->get(key, deadline);
    if (!value.ok()) continue;
    const std::string text(value->begin(), value->end());
    const bool inserted =
        insert(r, Status::remote("rank " + std::to_string(r) +
                                 " failed (posted by another rank: " + text + ")"));
    if (inserted && text.find(kLeftMarker) != std::string::npos) {
      MutexLock lock(&mu_);
      left_.push_back(r);
    }
    found = inserted || found;
  }
  return found;
}

}  // namespace collectives
}  // namespace hora
