// ParameterManager: the autotuner's decisions (rank 0 only; pure, no communication).
//
// It sees each training step's bytes reduced and duration (on_step) and tries one
// configuration per sample: the first sample is the configuration the job started with, the
// next ones what BayesianOptimizer suggests over the knobs left free (the user set none of
// them): the fusion threshold (log scale, kMinFusion..kMaxFusion), the cycle time (log scale,
// kMinCycleMs..kMaxCycleMs) and the response cache (on when its coordinate is >= 0.5).
// A sample lasts steps_per_sample() steps: warmup_steps discarded (a new fusion threshold
// replans, a cache turned on fills, new size classes get their algorithm tuned), then
// `windows` windows of window_steps steps each, each scored bytes / seconds; the sample's
// score is the median of its windows (SampleScorer), so one noisy window cannot win. After
// max_samples samples the search's best is the sample the Gaussian process's posterior mean
// ranks first (one lucky window or sample does not decide). Then, unless that is the starting
// configuration, it is confirmed side by side: confirm_samples more samples alternate between it
// and the starting configuration, and the starting one is kept unless the best's median over
// its confirmation samples is higher (so tuning from good settings does not end below them on
// one lucky measurement). Then the choice is final (converged()).
#pragma once

#include <cstdint>
#include <vector>

#include "core/engine/autotune_log.h"
#include "core/engine/bayes_opt.h"

namespace hora {
namespace engine {

// Scores one sample: steps after the first `warmup` are grouped in windows of `window`
// steps; each window scores its bytes over its seconds; score() is the median of the
// complete windows' scores (0 while none is complete).
class SampleScorer {
 public:
  SampleScorer(int warmup, int window) : warmup_(warmup), window_(window < 1 ? 1 : window) {}
  void add(int64_t bytes, double seconds);
  double score() const;
  int complete_windows() const { return static_cast<int>(scores_.size()); }
  void reset();

 private:
  int warmup_;
  int window_;
  int64_t steps_ = 0;
  int64_t bytes_ = 0;
  double seconds_ = 0;
  std::vector<double> scores_;
};

struct ParameterManagerOptions {
  AutotuneValues start;  // the configuration the job starts with (sample 0)
  bool tune_fusion = true;
  bool tune_cycle = true;
  bool tune_cache = true;
  int warmup_steps = 2;
  int window_steps = 2;
  int windows = 5;
  int max_samples = 16;
  int confirm_samples = 4;  // even: as many of the best as of the start
};

class ParameterManager {
 public:
  static constexpr int64_t kMinFusion = int64_t{4} << 10;
  static constexpr int64_t kMaxFusion = int64_t{256} << 20;
  static constexpr double kMinCycleMs = 0.05;
  static constexpr double kMaxCycleMs = 5.0;

  explicit ParameterManager(const ParameterManagerOptions& options);

  // Whether any knob is free (otherwise there is nothing to tune).
  bool tunes_anything() const { return dims_ > 0; }
  int steps_per_sample() const;
  // One step's bytes reduced and seconds, under current().
  void on_step(int64_t bytes, double seconds);
  // Ends the current sample (call after steps_per_sample() steps): records its score, and
  // moves to the next configuration, or to the best one once max_samples were taken. Returns
  // the finished sample's row.
  AutotuneRow finish_sample(int64_t step);
  const AutotuneValues& current() const { return current_; }
  bool converged() const { return converged_; }
  // The best sample so far, or the final choice once converged (REQUIRES: one finished).
  AutotuneRow best() const;
  int samples() const { return static_cast<int>(rows_.size()); }

  // The unit-cube point of `v` over the free knobs, and back (knobs not free keep start's).
  std::vector<double> to_point(const AutotuneValues& v) const;
  AutotuneValues from_point(const std::vector<double>& x) const;

 private:
  ParameterManagerOptions options_;
  int dims_ = 0;
  BayesianOptimizer optimizer_;
  SampleScorer scorer_;
  AutotuneValues current_;
  std::vector<double> current_x_;
  std::vector<AutotuneRow> rows_;
  bool converged_ = false;
  // The confirmation: the search's best against the start, alternating.
  bool confirming_ = false;
  AutotuneRow candidate_;
  std::vector<double> confirm_scores_[2];  // [0]: the candidate's, [1]: the start's
  AutotuneRow final_;
  void end_search();
  void confirm(const AutotuneRow& row);
};

}  // namespace engine
}  // namespace hora
