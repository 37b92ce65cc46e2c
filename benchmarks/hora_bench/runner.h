// The timing loop: for each size of the sweep, each placement (out of place, then in place)
// and each implementation: a barrier, `warmup` untimed calls, `iters` calls timed one by one;
// with --rounds R that turn of every implementation repeats R times (the order reversed every
// other round) and the statistics are taken over all R x iters samples. Then, per
// implementation (with -c 1), a fresh input, one more call and the closed-form check (check.h).
// Times are the slowest rank's (a max over ranks of each statistic); #wrong is summed over
// ranks, so every rank holds the same Measurement and exits with the same code.
//
// Buffers: two, allocated and pre-faulted once for the largest size and shared by every
// implementation, so no implementation pays first touches inside its timed loop; on the GPU
// with --device cuda (sweep_memory.h: inputs are written and outputs checked through host
// copies, outside the timed calls).
// Fairness: while an implementation is timed, no other one has a thread running in this
// process (hora's engine is parked through SweepSettings::set_engine).
// One thread; every call is collective (all ranks run the same sweep).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "benchmarks/hora_bench/implementation.h"
#include "benchmarks/hora_bench/options.h"
#include "collectives/communicator.h"
#include "hora/status.h"

namespace hora {
namespace bench {

struct Measurement {
  std::string impl;
  bool is_hora = false;
  bool is_reference = false;  // a bound (the wire column): not in the ratio, not checked
  bool in_place = false;
  size_t size_bytes = 0;  // nccl-tests' size (collective.h)
  size_t count = 0;
  bool available = true;  // false: the implementation cannot run this (see note)
  std::string note;
  double median_us = 0, p99_us = 0, max_us = 0;
  int64_t iterations = 0;  // timed calls on this rank, every round's (-n, --min-ms, --rounds)
  // With --rounds > 1: each round's median on its own (the slowest rank's), in round order,
  // so that two implementations compare within a round, side by side (auto_ratio).
  std::vector<double> round_median_us;
  double algbw_gbs = 0, busbw_gbs = 0;  // decimal GB/s, from the median
  int64_t wrong = 0;                    // -1 when not checked
  std::string choice;                   // hora auto's algorithm at this size (else empty)
};

// --min-ms: after `iters` timed calls that took `spent_us` in all, how many more bring the
// round to `min_us` at the same pace (0 when it is there already); at most
// kMaxIterationsPerRound in all, so a round's samples stay a few MB.
constexpr int64_t kMaxIterationsPerRound = 1000000;
int64_t more_iterations(int iters, double spent_us, double min_us);

// Median, 99th percentile and max of `samples` (microseconds). REQUIRES: non-empty.
struct TimeStats {
  double median_us = 0, p99_us = 0, max_us = 0;
};
TimeStats time_stats(std::vector<double> samples);

struct SweepSettings {
  Options options;
  int rank = 0;
  int ranks = 1;
  bool run_in_place = true;  // false in --compare runs (out of place only)
  double timeout_s = 300;    // deadline of each call
  // Called on every rank before each measurement with whether the implementation runs
  // through hora's engine (Implementation::uses_engine): hora-bench lets the engine run then
  // and parks it otherwise, so no hora thread runs beside a baseline. Empty: not called.
  std::function<Status(bool engine_needed)> set_engine;
};

// Runs the sweep. `control` (a communicator of its own) carries the barriers and the
// reductions of times and #wrong. `on_row` is called on every rank after each (size,
// placement) with that row's measurements, so rank 0 can print as it goes.
StatusOr<std::vector<Measurement>> run_sweep(
    const SweepSettings& settings, std::vector<std::unique_ptr<Implementation>>& impls,
    collectives::Communicator& control,
    const std::function<void(const std::vector<Measurement>&)>& on_row);

}  // namespace bench
}  // namespace hora
