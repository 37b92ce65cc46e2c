#include "core/engine/parameter_manager.h"

#include <algorithm>
#include <cmath>

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
  if (scores_.empty()) return 0.0;
  std::vector<double> s = scores_;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  return n % 2 == 1 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
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
  optimizer_.add_sample(current_x_, row.score);
  scorer_.reset();
  if (static_cast<int>(rows_.size()) >= options_.max_samples || dims_ == 0) {
    converged_ = true;
    current_ = best().values;
  } else {
    current_x_ = optimizer_.suggest();
    current_ = from_point(current_x_);
    current_x_ = to_point(current_);  // the point actually tried (rounded values)
  }
  return row;
}

AutotuneRow ParameterManager::best() const {
  AutotuneRow b = rows_[optimizer_.best_mean_index()];
  b.sample = -1;
  return b;
}

}  // namespace engine
}  // namespace hora
