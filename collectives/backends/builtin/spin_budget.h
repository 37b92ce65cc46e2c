// SpinBudget: how long a builtin waiter (ShmExchange::arrive_and_wait, the communicator's
// wait_op) busy-polls before it gives its core up and sleeps on a futex or poll(), adapted to
// what its recent waits saw. Spinning wins when each rank has a core to itself (a peer's post
// is seen in ~100 ns, a futex wake costs 5-50 us); it loses when the cores are shared, with
// more ranks than CPUs or with the job's own compute threads beside it: then the spinner holds
// the very core the peer (or the compute) needs, and every wait costs the whole spin.
//
// Policy (three stages per wait: spin, yield, sleep):
//   spin   busy-poll for current(); starts at the maximum (options' spin, 50 us by default).
//   yield  with shared cores (more local ranks than CPUs in the union of their affinities,
//          cpu_affinity.h) the spin yields every few polls instead of only pausing.
//   sleep  futex/poll until woken, the next liveness check or the deadline (the caller's).
// Adaptation: a wait that outran the spin and slept halves the budget (down to kMinSpin);
// one that ended while spinning doubles it (up to the maximum). A spinner that finds a gap of
// more than kPreemptedGap between two of its own polls lost its core to another thread: the
// budget drops to kMinSpin at once and the caller goes to sleep. Every kProbeEvery-th wait
// below the maximum spins the whole maximum once (a probe): when the cores are free again it
// ends spinning and the budget returns to the maximum at once. On an idle machine every wait
// ends within the spin, so the budget stays at its maximum and the idle latency is unchanged;
// with busy cores it falls to a few microseconds within a handful of waits, and a failed
// probe costs one maximum spin per kProbeEvery waits.
//
// One SpinBudget per waiter object, used by the one thread that waits there (no locking).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace hora {
namespace collectives {
namespace builtin {

class SpinBudget {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::nanoseconds kMinSpin{2000};
  static constexpr std::chrono::nanoseconds kPreemptedGap{30000};

  // `max`: the longest spin (0 turns spinning off: every wait sleeps at once).
  explicit SpinBudget(std::chrono::nanoseconds max = std::chrono::microseconds(50))
      : max_(max), current_(max) {}

  static constexpr uint32_t kProbeEvery = 32;

  std::chrono::nanoseconds current() const { return probing_ ? max_ : current_; }
  std::chrono::nanoseconds max() const { return max_; }

  // A wait begins (call once per wait, before spinning): decides whether it probes.
  void begin_wait() { probing_ = current_ < max_ && ++waits_ % kProbeEvery == 0; }
  // The wait ended while spinning.
  void on_spun() {
    current_ = probing_ ? max_ : std::min(max_, std::max(current_ * 2, kMinSpin));
    probing_ = false;
  }
  // The wait outran the spin and went to sleep.
  void on_slept() {
    if (!probing_) current_ = std::max(std::min(kMinSpin, max_), current_ / 2);
    probing_ = false;
  }
  // Two consecutive polls `gap` apart. Returns true (and drops the budget to the floor) when
  // the gap says the spinner was descheduled: the caller should sleep now.
  bool preempted(Clock::duration gap) {
    if (gap < kPreemptedGap) return false;
    current_ = std::min(kMinSpin, max_);
    probing_ = false;
    return true;
  }

 private:
  std::chrono::nanoseconds max_;
  std::chrono::nanoseconds current_;
  uint32_t waits_ = 0;
  bool probing_ = false;  // this wait spins the maximum
};

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
