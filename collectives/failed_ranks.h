// FailedRanks: the ranks of the job this process knows to have failed (died, or stopped past
// a deadline), so that one failure ends every wait on the failed rank at once.
//
// Without it, each wait finds a stopped rank by itself: a collective times out naming rank R
// after HORA_TIMEOUT_S, and the engine's next (idle) negotiation round, a process set's
// engine or the shutdown then each wait out another full deadline on the same rank. With it:
//   1. The first wait that finds rank R dead (its process is gone, its connection closed) or
//      past its deadline records R here (record()), with the error it returns.
//   2. record() posts "dead/<R>" (the error's text) to the job's store, so other processes
//      learn it too (publish()).
//   3. Every other wait on R in this process (any communicator, any engine, the shutdown)
//      checks the registry where it already polls (contains(): one relaxed atomic load while
//      nothing failed) and returns at once with failure_of(), which names R and the first
//      error.
//   4. A wait that is already long (over a second) reads the others' posts, at most every
//      100 ms per process (poll_store()), so a rank another process found stopped fails
//      here too without a second deadline.
// Ranks are the job's global ranks: a process set's communicator maps its own ranks through
// its members. One registry per process (process()), not one per Context, since every
// communicator of the process must see it: the job's, each process set's, and those that
// hora's benchmarks and tests make themselves, for the job generation it was last
// begun for (begin(): hora::init; re-initialisation begins a new one and forgets the old
// membership's failures).
//
// Threads: every member function from any thread. mu_ guards the rank list and the errors;
// store_mu_ guards the store pointer and is held across a store request (bounded by a short
// deadline), so end() never frees a store in use. Lock order: store_mu_ before mu_.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/rendezvous/store.h"
#include "hora/mutex.h"
#include "hora/status.h"
#include "hora/thread_annotations.h"

namespace hora {
namespace collectives {

class FailedRanks {
 public:
  // The process-wide registry.
  static FailedRanks& process();

  FailedRanks() = default;
  FailedRanks(const FailedRanks&) = delete;
  FailedRanks& operator=(const FailedRanks&) = delete;

  // Starts job generation `generation` as global rank `self` of `size`: forgets every
  // recorded failure, and publishes to / reads from `store` (borrowed, may be null: local
  // only; must stay valid until end()) under `prefix`.
  void begin(int64_t generation, Store* store, const std::string& prefix, int self, int size);
  // Stops using the store (before it is freed). Recorded failures stay readable.
  void end();

  // True once any rank is recorded in this generation: one relaxed atomic load, for the
  // wait loops' fast path.
  bool any() const { return count_.load(std::memory_order_relaxed) != 0; }
  // True when global rank `rank` is recorded.
  bool contains(int rank) const;
  // Records global rank `rank` as failed with `cause` (the error of the wait that found it;
  // the first cause per rank is kept) and posts it to the store (blocks up to 500 ms when the
  // store does not answer). Returns true when `rank` was not recorded before. Ignores
  // ranks out of range and this process's own rank.
  bool record(int rank, const Status& cause);
  // record() for a wait that timed out on `rank` (which may only be waiting on another rank
  // itself: in a chain 0 -> 2 -> stopped 1, rank 0's wait times out on 2, about when rank 2's
  // on 1 does). Reads the other processes' posts for up to `grace` (each read bounded by
  // 100 ms; blocks that long) and records nothing once another rank is known failed, the
  // likelier cause. `grace` 0 where the caller knows `rank` itself is stopped or gone.
  // Returns true when it recorded `rank`.
  bool record_timeout(int rank, const Status& cause,
                      std::chrono::milliseconds grace = std::chrono::milliseconds(500));
  bool record_member_timeout(const std::vector<int>& members, int rank, const Status& cause,
                             std::chrono::milliseconds grace = std::chrono::milliseconds(500)) {
    return record_timeout(global_rank(members, rank), cause, grace);
  }
  // Posts this process's own rank as gone, with `why`, before it leaves the generation on
  // purpose (an elastic reset): a peer still waiting on it learns it from the store within
  // poll_store()'s rhythm instead of at its deadline. Blocks up to 500 ms like record().
  void announce_leaving(const std::string& why);
  // The error for a wait of global rank `self` on `rank` (recorded): the recorded cause's
  // code, naming `rank` and carrying the first error's text. OK when `rank` is not recorded.
  Status failure_of(int rank) const;
  // The recorded ranks, ascending, and the first recorded error (OK when none).
  std::vector<int> ranks() const;
  // ranks() less those that announced they left (announce_leaving()): the ranks that failed.
  std::vector<int> culprits() const;
  Status first_failure() const;
  int64_t generation() const;

  // The global rank of rank `rank` of a communicator whose ranks are the job's `members`
  // (empty: the job's own communicator, so `rank` itself).
  static int global_rank(const std::vector<int>& members, int rank);
  // For a wait on rank `rank` of such a communicator, begun `waited` ago: failure_of() that
  // rank's global rank, after poll_store(waited). OK when it is not recorded. Costs one
  // relaxed load while nothing is recorded and the wait is under a second.
  Status check_wait(const std::vector<int>& members, int rank,
                    std::chrono::steady_clock::duration waited);
  // For a collective of such a communicator of `size` ranks (every rank takes part), begun
  // `waited` ago: check_wait() of the first rank other than `self` that is recorded.
  Status check_collective(const std::vector<int>& members, int size, int self,
                          std::chrono::steady_clock::duration waited);
  // record() of rank `rank` of such a communicator.
  bool record_member(const std::vector<int>& members, int rank, const Status& cause) {
    return record(global_rank(members, rank), cause);
  }

  // For a wait that began `waited` ago: once it is over a second, reads the other
  // processes' "dead/<R>" posts, at most every 100 ms in this process (a wait that finds
  // another one polling skips), each request bounded by 100 ms. Returns true when it
  // recorded a rank.
  bool poll_store(std::chrono::steady_clock::duration waited);

 private:
  // Adds `rank` (not posted); true when new.
  bool insert(int rank, const Status& cause);
  void post(int rank, const std::string& text);
  // Reads the posts, unless the last read was under 100 ms ago (`rate_limited`).
  bool poll_locked(bool rate_limited) HORA_REQUIRES(store_mu_);

  mutable Mutex mu_;
  std::atomic<int> count_{0};     // ranks recorded (the fast path's check)
  std::atomic<uint64_t> low_{0};  // bit r: rank r < 64 recorded (lock-free contains())
  std::vector<int> ranks_ HORA_GUARDED_BY(mu_);
  std::vector<Status> causes_ HORA_GUARDED_BY(mu_);  // parallel to ranks_
  std::vector<int> left_ HORA_GUARDED_BY(mu_);       // recorded ranks that announced leaving
  int64_t generation_ HORA_GUARDED_BY(mu_) = -1;
  int self_ HORA_GUARDED_BY(mu_) = -1;
  int size_ HORA_GUARDED_BY(mu_) = 0;

  Mutex store_mu_;
  Store* store_ HORA_GUARDED_BY(store_mu_) = nullptr;
  std::string prefix_ HORA_GUARDED_BY(store_mu_);
  std::chrono::steady_clock::time_point last_poll_ HORA_GUARDED_BY(store_mu_);
};

}  // namespace collectives
}  // namespace hora
