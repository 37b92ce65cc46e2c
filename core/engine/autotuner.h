// Autotuner: HORA_AUTOTUNE=1's search over the fusion threshold, the cycle time (the burst
// window) and the response cache, from the job's own training steps, applied by every rank at
// the same step.
//
// Steps: the engine hands it every round's agreed list (after_round). A step ends when an
// allreduce name already seen since the last step boundary is agreed again (a training loop
// reduces each gradient once a step); the list is the same on every rank, so every rank counts
// the same steps. Bytes are the allreduces' (one rank's contribution); time is rank 0's wall
// clock between boundaries.
//
// Decisions: rank 0 runs the ParameterManager (Bayesian optimisation, medians of windows, see
// parameter_manager.h). Every steps_per_sample() steps every rank takes part in one small
// allreduce (float64 sum, its own tag; rank 0 contributes the values, the others zeros, so the
// sum is rank 0's values bit for bit) carrying the next configuration and whether the search
// converged; each rank applies it (the engine's apply hook) before its next round, so every
// rank runs the same configuration from the same step on. Rank 0 writes each finished sample to
// HORA_AUTOTUNE_LOG, and the best sample last once converged, and logs the final choice at
// info level.
//
// Cost: after convergence (or when disabled) after_round is one branch.
//
// Threads: after_round on the thread holding the engine's run token; state() from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <unordered_set>

#include "collectives/communicator.h"
#include "core/engine/autotune_log.h"
#include "core/engine/message.h"
#include "core/engine/parameter_manager.h"
#include "hora/mutex.h"
#include "hora/status.h"
#include "hora/thread_annotations.h"
#include "hora/types.h"

namespace hora {
namespace engine {

struct AutotunerOptions {
  bool enabled = false;  // HORA_AUTOTUNE=1 (explicitly)
  ParameterManagerOptions manager;
  std::string log_path;    // HORA_AUTOTUNE_LOG (rank 0 writes it), empty = none
  double timeout_s = 300;  // deadline of the decision's allreduce
};

class Autotuner {
 public:
  // Applies a configuration to the engine (on the round thread, between rounds).
  using Apply = std::function<void(const AutotuneValues&)>;
  // The allreduce algorithms fixed per size class so far (the log's algorithms column).
  using Algorithms = std::function<std::string()>;
  // How many allreduces the algorithm tuner ran as tuning samples so far (the same count on
  // every rank): a step that ran any is not scored, since it timed other algorithms than the
  // configuration will run.
  using TuningSamples = std::function<int64_t()>;

  Autotuner(collectives::Communicator& comm, const AutotunerOptions& options, Apply apply,
            Algorithms algorithms, TuningSamples tuning_samples = nullptr);
  Autotuner(const Autotuner&) = delete;
  Autotuner& operator=(const Autotuner&) = delete;

  // Still searching (false once converged, or when nothing is tuned).
  bool active() const { return active_; }
  // After a round's list was executed. Fails only when the decision's allreduce fails.
  Status after_round(const ResponseList& list) {
    if (!active_) return Status::OK();
    return observe(list);
  }
  AutotuneState state() const;

 private:
  Status observe(const ResponseList& list);
  Status end_step();
  // Every rank: rank 0's configuration and converged flag, agreed; then applied.
  Status agree();

  collectives::Communicator& comm_;
  const AutotunerOptions options_;
  Apply apply_;
  Algorithms algorithms_;
  TuningSamples tuning_samples_;
  int64_t last_tuning_samples_ = 0;
  int64_t scored_steps_ = 0;  // steps counted towards samples (every rank alike)
  int dirty_in_row_ = 0;      // steps in a row left out for the algorithm tuner's samples
  ParameterManager manager_;  // decides on rank 0 only
  bool active_ = false;
  std::unordered_set<std::string> seen_;  // allreduce names since the last step boundary
  int64_t steps_ = 0;
  int64_t step_bytes_ = 0;
  std::chrono::steady_clock::time_point step_start_;
  AutotuneLogWriter log_;
  mutable Mutex mu_;
  AutotuneState state_ HORA_GUARDED_BY(mu_);
};

// "2^14:ring 2^20:rd": the decided algorithm per size class, from `decided(c)` (kAuto: none).
std::string describe_algorithms(const std::function<int(int size_class)>& decided);

}  // namespace engine
}  // namespace hora
