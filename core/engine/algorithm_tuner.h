// AlgorithmTuner: the executor's online choice of allreduce algorithm under kAuto, from the
// timings of the job's own allreduces (HORA_AUTOTUNE, HORA_AUTOTUNE_SAMPLES).
//
// The selector's choice (cost table, or the init calibration's few probes) can be wrong on the
// machine at hand; the tuner measures instead. Allreduces are grouped in size classes (class c
// holds byte counts in [2^c, 2^(c+1)); zero bytes are never tuned). Per class:
//   1. Tuning. The class's candidates are explain_allreduce's available algorithms for the
//      class's smallest byte count (the calibration's when one applies), in the selector's
//      order. The class's n-th allreduce runs candidates[n % m]: a pure function of how many
//      allreduces of the class this executor has run, which is the same on every rank because
//      every rank runs the same agreed responses in the same order. Each rank records its own
//      wall time of each such allreduce.
//   2. Agreement. Right after the class's (K x m)-th allreduce (K = samples per candidate),
//      still inside that response's execution, every rank allreduces (max, float64, rd over the
//      same communicator, its own tag) the median of its K samples per candidate: the agreed
//      figure is the slowest rank's median, bitwise identical everywhere.
//   3. Decision (decide(), pure): the selector's own choice for the class is kept unless it
//      measured more than kKeepMargin slower than the fastest candidate, which is then taken
//      (the first in candidate order on a tie). Logged at info level with the figures. From
//      then on the class runs that algorithm.
// Every rank therefore runs the same algorithm for every allreduce (tuning or decided), which
// the job needs: ranks that disagree deadlock.
//
// Disabled (HORA_AUTOTUNE=0, a fixed HORA_ALLREDUCE_ALGO, one rank): choose() is the selector's
// choice and nothing is recorded.
//
// Threads: choose/record/take run on the engine's thread only (they touch the communicator).
// decided() may be read from any thread (atomics). set_skew_for_test before the first
// allreduce is enqueued.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/selector.h"
#include "collectives/topology.h"
#include "hora/status.h"

namespace hora {
namespace engine {

struct AlgorithmTunerOptions {
  bool enabled = true;     // HORA_AUTOTUNE
  int samples = 3;         // HORA_AUTOTUNE_SAMPLES: timed allreduces per candidate and class
  double timeout_s = 300;  // deadline of the agreement allreduce
  // The requested algorithm (HORA_ALLREDUCE_ALGO); anything but kAuto disables tuning.
  collectives::Algorithm requested = collectives::Algorithm::kAuto;
  const collectives::Topology* topology = nullptr;  // the selector's (borrowed; may be null)
};

// What choose() picked for one allreduce; hand it back to record() once the allreduce ran.
struct TunerPick {
  collectives::Algorithm algorithm = collectives::Algorithm::kRing;
  int size_class = -1;  // -1: not a tuning sample (record() then does nothing)
};

// The engine's small agreements between rounds (the tuners'): allreduces `count` float64 in
// place over every rank of `comm` (recursive doubling, its own `tag`, deadline `timeout_s`
// from now). Every rank calls it at the same point of the same agreed responses.
Status agree_doubles(collectives::Communicator& comm, double* words, size_t count, ReduceOp op,
                     uint32_t tag, double timeout_s);

class AlgorithmTuner {
 public:
  // Size classes: 0..kClasses-1 (2^63 bytes and more fall in the last).
  static constexpr int kClasses = 64;
  // The selector's choice is kept unless it measured more than this much slower than the best.
  static constexpr double kKeepMargin = 1.05;

  AlgorithmTuner(collectives::Communicator& comm, const AlgorithmTunerOptions& options);
  AlgorithmTuner(const AlgorithmTuner&) = delete;
  AlgorithmTuner& operator=(const AlgorithmTuner&) = delete;

  // --- Pure decision part (no communication; unit-testable). ---
  // floor(log2(bytes)); 0 for bytes <= 1.
  static int size_class(size_t bytes);
  // The candidate index of a class's `sample`-th allreduce (0-based) among `candidates`.
  static size_t rotation(int64_t sample, size_t candidates) {
    return static_cast<size_t>(sample % static_cast<int64_t>(candidates));
  }
  // Median of `samples` (the mean of the middle two for an even count). REQUIRES: non-empty.
  static double median(std::vector<double> samples);
  // The index of the algorithm to keep from the agreed figures (us[i] of candidates[i]):
  // `static_choice` unless its figure exceeds kKeepMargin x the fastest; then the fastest, the
  // first on a tie. A static choice that is not a candidate counts as infinitely slow.
  static size_t decide(const std::vector<collectives::Algorithm>& candidates,
                       const std::vector<double>& us, collectives::Algorithm static_choice);

  // --- The executor's hooks (engine thread). ---
  // The algorithm the next allreduce of `bytes` will run, without counting it: the fused
  // in-place decision asks this before the allreduce path is known. Equal to take(bytes)'s.
  collectives::Algorithm peek(size_t bytes);
  // The algorithm for this allreduce of `bytes`, counted as the class's next sample while it
  // tunes. Every rank must call it for every allreduce of a response, in the same order.
  TunerPick take(size_t bytes);
  // Records this rank's wall time of the allreduce `pick` ran. When it completes the class's
  // last sample, runs the agreement (a collective over comm: every rank reaches it at the same
  // allreduce) and fixes the class's choice. Fails only as the agreement's allreduce fails
  // (kTimeout / kRemote naming the peer, within options.timeout_s).
  Status record(const TunerPick& pick, double us);

  bool enabled() const { return enabled_; }
  // Tuning samples taken so far over every class (the same count on every rank after the same
  // responses): the autotuner leaves steps that ran any out of its scores. Engine thread.
  int64_t samples_taken() const { return samples_taken_; }
  // Any thread: the class's fixed choice, or kAuto while it is not decided (or tuning is off).
  collectives::Algorithm decided(int size_class) const {
    return static_cast<collectives::Algorithm>(
        decided_[size_class].load(std::memory_order_acquire));
  }
  // Tests: replaces this rank's median per candidate before agreement (the agreed figures must
  // still be identical on every rank). REQUIRES: called before the first allreduce is enqueued.
  void set_skew_for_test(
      std::function<double(collectives::Algorithm algorithm, int size_class, double us)> skew) {
    skew_ = std::move(skew);
  }

 private:
  struct ClassState {
    bool started = false;
    std::vector<collectives::Algorithm> candidates;
    std::vector<std::vector<double>> us;  // us[i]: this rank's samples of candidates[i]
    int64_t taken = 0;                    // allreduces of the class so far (while tuning)
  };
  collectives::Selection static_selection(size_t bytes) const;
  ClassState& start(int size_class);
  Status agree(int size_class, ClassState& state);

  collectives::Communicator& comm_;
  const AlgorithmTunerOptions options_;
  const bool enabled_;
  std::array<ClassState, kClasses> classes_;
  int64_t samples_taken_ = 0;
  std::array<std::atomic<uint8_t>, kClasses> decided_{};  // Algorithm; kAuto (0): not yet
  std::function<double(collectives::Algorithm, int, double)> skew_;
};

}  // namespace engine
}  // namespace hora
