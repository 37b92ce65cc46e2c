#include "core/engine/parameter_manager.h"

#include <algorithm>
#include <cmath>

#include "core/engine/algorithm_tuner.h"

namespace hora {
namespace engine {
namespace {

int count_dims(const ParameterManagerOptions& o) {
  return static_cast<int>(o.tune_fusion) + static_cast<int>(o.tune_cycle) +
         static_cast<int>(o.tune_cache);
}

// x in [0,1] -> lo..hi on a log scale, and back (clamped).
double log_scale(double x, double lo, double hi) {
  return std::exp(std::log(lo) + std::clamp(x, 0.0, 1.0) * (std::log(hi) - std::log(lo)));
}
double log_unscale(double v, double lo, double hi) {
  if (v <= lo) return 0.0;
  return std::clamp((std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo)), 0.0, 1.0);
}

}  // namespace

void SampleScorer::add(int64_t bytes, double seconds) {
  if (++steps_ <= warmup_) return;
  bytes_ += bytes;
  seconds_ += seconds;
  if ((steps_ - warmup_) % window_ != 0) return;
  scores_.push_back(seconds_ > 0 ? static_cast<double>(bytes_) / seconds_ : 0.0);
  bytes_ = 0;
  seconds_ = 0;
}

double SampleScorer::score() const {
  return scores_.empty() ? 0.0 : AlgorithmTuner::median(scores_);
}

void SampleScorer::reset() {
  steps_ = 0;
  bytes_ = 0;
  seconds_ = 0;
  scores_.clear();
}

ParameterManager::ParameterManager(const ParameterManagerOptions& options)
    : options_(options),
      dims_(count_dims(options)),
      optimizer_(std::max(count_dims(options), 1)),
      scorer_(options.warmup_steps, options.window_steps),
      current_(options.start),
      current_x_(to_point(options.start)) {}

int ParameterManager::steps_per_sample() const {
  return options_.warmup_steps + options_.window_steps * std::max(options_.windows, 1);
}

std::vector<double> ParameterManager::to_point(const AutotuneValues& v) const {
  std::vector<double> x;
  if (options_.tune_fusion)
    x.push_back(log_unscale(static_cast<double>(v.fusion_threshold_bytes), kMinFusion, kMaxFusion));
  if (options_.tune_cycle) x.push_back(log_unscale(v.cycle_time_ms, kMinCycleMs, kMaxCycleMs));
  if (options_.tune_cache) x.push_back(v.cache_enabled ? 1.0 : 0.0);
  return x;
}

AutotuneValues ParameterManager::from_point(const std::vector<double>& x) const {
  AutotuneValues v = options_.start;
  size_t d = 0;
  if (options_.tune_fusion) {
    // Whole KiB: the log shows round figures and a pinned run reads back the same value.
    const double bytes = log_scale(x[d++], kMinFusion, kMaxFusion);
    v.fusion_threshold_bytes = static_cast<int64_t>(std::llround(bytes / 1024.0)) * 1024;
  }
  if (options_.tune_cycle) {
    const double ms = log_scale(x[d++], kMinCycleMs, kMaxCycleMs);
    v.cycle_time_ms = std::round(ms * 1000.0) / 1000.0;
  }
  if (options_.tune_cache) v.cache_enabled = x[d++] >= 0.5;
  return v;
}

void ParameterManager::on_step(int64_t bytes, double seconds) {
  if (!converged_) scorer_.add(bytes, seconds);
}

AutotuneRow ParameterManager::finish_sample(int64_t step) {
  AutotuneRow row;
  row.values = current_;
  row.score = scorer_.score();
  row.sample = static_cast<int64_t>(rows_.size());
  row.step = step;
  row.window_steps = options_.window_steps;
  row.windows = scorer_.complete_windows();
  rows_.push_back(row);
  scorer_.reset();
  if (confirming_) {
    confirm(row);
    return row;
  }
  optimizer_.add_sample(current_x_, row.score);
  if (static_cast<int>(rows_.size()) >= options_.max_samples || dims_ == 0) {
    end_search();
  } else {
    current_x_ = optimizer_.suggest();
    current_ = from_point(current_x_);
    current_x_ = to_point(current_);  // the point actually tried (rounded values)
  }
  return row;
}

void ParameterManager::end_search() {
  candidate_ = rows_[optimizer_.best_mean_index()];
  candidate_.sample = -1;
  if (candidate_.values == options_.start || options_.confirm_samples < 2) {
    final_ = candidate_;
    converged_ = true;
    current_ = final_.values;
    return;
  }
  confirming_ = true;
  current_ = candidate_.values;
}

void ParameterManager::confirm(const AutotuneRow& row) {
  // Confirmation samples alternate: the candidate's, then the start's, ...
  const size_t index = confirm_scores_[0].size() + confirm_scores_[1].size();
  confirm_scores_[index % 2].push_back(row.score);
  const size_t done = index + 1;
  if (done < static_cast<size_t>(options_.confirm_samples)) {
    current_ = done % 2 == 0 ? candidate_.values : options_.start;
    return;
  }
  const double cand = AlgorithmTuner::median(confirm_scores_[0]);
  const double base = AlgorithmTuner::median(confirm_scores_[1]);
  final_ = candidate_;
  if (cand < base) final_.values = options_.start;
  final_.score = std::max(cand, base);
  converged_ = true;
  confirming_ = false;
  current_ = final_.values;
}

AutotuneRow ParameterManager::best() const {
  if (converged_) return final_;
  AutotuneRow b = rows_[optimizer_.best_mean_index()];
  b.sample = -1;
  return b;
}

}  // namespace engine
}  // namespace hora
