// ShmExchange: the memory and the sync point of the single-copy shared-memory collectives
// (shm_allreduce.cc), for a communicator whose every rank runs on this host. One ShmSegment,
// mapped by every rank at creation (pre-faulted, hugepage-advised, its name unlinked before
// establish() returns, so nothing is left in /dev/shm even after kill -9):
//
//   [header: magic, size, slot_bytes, shared_bytes]                     one page
//   per rank r: [control: arrive, failed, pid, source offset, futex]  one page
//   per rank r: [slot 0][slot 1][shared region]                        page-aligned
//
// Every rank may read every rank's slots and shared region; a rank writes only its own.
//
// Sync point (arrive_and_wait): rank r stores arrive[r] = ++seq (release) and waits until
// every peer's arrive >= seq (acquire), so what a rank wrote before arriving is visible to
// every peer after the wait. Waiting spins for `spin` (yielding the core every 64 polls when
// yield_while_spinning: more ranks than CPUs), then sleeps on the rank's own futex
// word after setting its waiting flag; an arriving rank wakes only peers whose flag is set
// (seq_cst fences on both sides, so no wake-up is lost). Every rank calls the same sequence
// of sync points and steps (a step: one chunk of one collective, begun with next_step()); the
// step parity names the slot the step uses. A collective ends every peer read of a step's
// slots before that peer's first sync point of the next step, so with two slots a rank may
// refill a slot (step k + 2) as soon as it passed a sync point of step k + 1: no extra sync
// point is needed to release a slot.
//
// Failure: a wait ends with kTimeout at its Deadline (naming the ranks that have not
// arrived), with kRemote when the communicator was aborted, when a peer's process is gone
// (checked every liveness_interval) or when a peer marked itself failed. A rank whose wait
// failed marks itself failed too, recording the rank that caused it (the dead one, or
// itself), so its peers stop at once with kRemote naming both; the
// exchange then stays failed (its ranks are out of step) and every later call returns the
// first error.
//
// Threads: one thread (the communicator's) uses it; wake() may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/backends/builtin/shm_segment.h"
#include "collectives/backends/builtin/spin_budget.h"
#include "collectives/rendezvous/store.h"
#include "core/base/deadline.h"
#include "hora/status.h"

namespace hora {
namespace collectives {
namespace builtin {

struct ShmExchangeOptions {
  size_t slot_bytes = size_t{1} << 20;  // one step's data per rank; two slots per rank
  size_t shared_bytes = 0;              // what shared_buffer() can hand out per rank
  // The longest spin before a wait sleeps on its futex; the spin actually used adapts
  // (spin_budget.h).
  std::chrono::microseconds spin{50};
  // Yield the core every 64 polls while spinning: for hosts whose ranks share cores.
  bool yield_while_spinning = false;
  std::chrono::milliseconds liveness_interval{100};
  // Global ranks of the exchange's ranks, for FailedRanks (collectives/failed_ranks.h);
  // empty: rank r is global rank r.
  std::vector<int> members;
};

class ShmExchange {
 public:
  // Creates (rank 0) or maps the exchange of all `size` ranks (every one on this host),
  // exchanging the segment name through `store` under `key_prefix`. `aborted` (may be null)
  // is polled by every wait. Blocks until every rank mapped it or `deadline`.
  static StatusOr<std::unique_ptr<ShmExchange>> establish(
      Store& store, const std::string& key_prefix, int rank, int size,
      const ShmExchangeOptions& options, const std::atomic<bool>* aborted, Deadline deadline);
  ~ShmExchange();
  ShmExchange(const ShmExchange&) = delete;
  ShmExchange& operator=(const ShmExchange&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  size_t slot_bytes() const { return slot_bytes_; }
  size_t shared_bytes() const { return shared_bytes_; }

  // Begins the next step and returns its number (every rank counts steps identically).
  uint64_t next_step() { return ++step_; }
  // The slot that step `step` uses in rank `r`'s memory (slot_bytes bytes).
  uint8_t* slot(int r, uint64_t step) const;
  // The `bytes` (at most slot_bytes) of that slot step `step` uses: the slot is used window
  // after window (`bytes` rounded up to a page) rather than from its start every time, so that
  // a step writes lines its peers last read many steps before. Lines a peer read recently are
  // in its cache, and every store to one waits for that copy to be invalidated first: at two
  // ranks a 64 KiB copy into a slot the peer had read the step before ran at about 9 GB/s,
  // into one it had read 16 steps before at about 40 GB/s. Under 1 KiB, the slot's start.
  // Every rank passes the same `bytes` for a step (it names the same window in every rank's
  // slot).
  uint8_t* slot(int r, uint64_t step, size_t bytes) const;
  // Rank r's shared region (null when shared_bytes is 0).
  uint8_t* shared(int r) const;
  // The offset of [data, data + bytes) in this rank's shared region, or -1 when it is not
  // wholly inside it.
  int64_t shared_offset_of(const void* data, size_t bytes) const;

  // A value this rank publishes for the current call (the allreduce's: where its data are);
  // peers read it after the call's first sync point and before their second, and the rank
  // publishes the next call's only after the call's last sync point.
  void publish_source(int64_t offset);
  int64_t source_of(int r) const;

  // The sync point: see the file comment. `what` names the collective in errors.
  Status arrive_and_wait(Deadline deadline, const char* what);
  // The first error, once a wait failed.
  const Status& failure() const { return failure_; }
  // Wakes this rank's own wait (after abort), from any thread.
  void wake();

  struct Control;  // defined in the .cc

 private:
  ShmExchange(int rank, int size, const ShmExchangeOptions& options,
              std::unique_ptr<ShmSegment> segment, const std::atomic<bool>* aborted);
  // Records the first error and flags this rank failed, naming `culprit` (the rank that caused
  // it) to the peers.
  Status fail(Status status, int culprit);
  Status check_peers(uint64_t seq, const char* what, int* culprit);
  // The steps of arrive_and_wait's wait for sync point `seq`:
  // Wakes the peers that sleep on their futex (after this rank's arrive store).
  void wake_sleeping_peers();
  bool all_arrived(uint64_t seq) const;
  // Fails the exchange with kTimeout, naming the ranks that have not arrived after `waited`.
  Status time_out(uint64_t seq, const char* what, std::chrono::steady_clock::duration waited);
  // A rank that has not arrived at `seq` and that this process already knows failed
  // (collectives/failed_ranks.h; the store's posts read once the wait is `waited` long): its
  // error, with *culprit set to it; else OK.
  Status known_failure(uint64_t seq, std::chrono::steady_clock::duration waited, int* culprit);
  // Sleeps on this rank's futex for at most `cap_us`, unless all arrived or it was aborted.
  void sleep_until_woken(uint64_t seq, int64_t cap_us);
  Control* control(int r) const;

  int rank_;
  int size_;
  size_t slot_bytes_;
  size_t shared_bytes_;
  size_t region_bytes_;     // per rank: two slots plus the shared region
  SpinBudget spin_budget_;  // the waiting thread's (one at a time: the class's contract)
  bool yield_while_spinning_;
  std::chrono::milliseconds liveness_interval_;
  const std::vector<int> members_;  // global ranks (ShmExchangeOptions::members)
  std::unique_ptr<ShmSegment> segment_;
  const std::atomic<bool>* aborted_;
  uint64_t seq_ = 0;   // sync points passed
  uint64_t step_ = 0;  // steps begun
  Status failure_;
};

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
