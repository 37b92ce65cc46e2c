#include "core/engine/autotuner.h"

#include <array>

#include "collectives/selector.h"
#include "core/engine/algorithm_tuner.h"
#include "hora/logging.h"

namespace hora {
namespace engine {
namespace {

// Tag of the decision's allreduce ("atun"): distinct from the engine's and the algorithm
// tuner's own.
constexpr uint32_t kDecisionTag = 0x6174756e;

// The decision's words: fusion, cycle, cache, hierarchical allreduce, allgather, converged.
constexpr size_t kWords = 6;

}  // namespace

std::string describe_algorithms(const std::function<int(int size_class)>& decided) {
  std::string out;
  for (int c = 0; c < 64; ++c) {
    const auto a = static_cast<collectives::Algorithm>(decided(c));
    if (a == collectives::Algorithm::kAuto) continue;
    if (!out.empty()) out += ' ';
    out += "2^" + std::to_string(c) + ":" + collectives::algorithm_name(a);
  }
  return out;
}

Autotuner::Autotuner(collectives::Communicator& comm, const AutotunerOptions& options, Apply apply,
                     Algorithms algorithms, TuningSamples tuning_samples)
    : comm_(comm),
      options_(options),
      apply_(std::move(apply)),
      algorithms_(std::move(algorithms)),
      tuning_samples_(std::move(tuning_samples)),
      manager_(options.manager),
      active_(options.enabled && manager_.tunes_anything()),
      step_start_(std::chrono::steady_clock::now()) {
  const AutotuneValues& v = options.manager.start;
  state_.enabled = active_;
  state_.fusion_threshold_bytes = v.fusion_threshold_bytes;
  state_.cycle_time_ms = v.cycle_time_ms;
  state_.cache_enabled = v.cache_enabled;
  state_.hierarchical_allreduce = v.hierarchical_allreduce;
  state_.hierarchical_allgather = v.hierarchical_allgather;
  if (active_ && comm_.rank() == 0 && !options.log_path.empty()) {
    Status s = log_.open(options.log_path);
    if (!s.ok()) {
      HORA_LOG(kWarning) << "autotune log off: " << s.to_string();
    }
  }
}

AutotuneState Autotuner::state() const {
  MutexLock lock(&mu_);
  return state_;
}

Status Autotuner::observe(const ResponseList& list) {
  for (const Response& r : list.responses) {
    if (r.type != CollectiveType::kAllreduce || r.is_error()) continue;
    if (!seen_.insert(r.name).second) {
      HORA_RETURN_IF_ERROR(end_step());
      if (!active_) return Status::OK();
      seen_.clear();
      seen_.insert(r.name);
    }
    step_bytes_ += r.element_count() * static_cast<int64_t>(data_type_bytes(r.dtype));
  }
  return Status::OK();
}

Status Autotuner::end_step() {
  const auto now = std::chrono::steady_clock::now();
  ++steps_;
  {
    MutexLock lock(&mu_);
    state_.steps = steps_;
  }
  // A step in which the algorithm tuner timed candidates is left out (up to a sample's worth
  // in a row, so the search always moves on).
  const int64_t taken = tuning_samples_ ? tuning_samples_() : 0;
  const bool dirty = taken != last_tuning_samples_ && dirty_in_row_ < manager_.steps_per_sample();
  last_tuning_samples_ = taken;
  dirty_in_row_ = dirty ? dirty_in_row_ + 1 : 0;
  if (!dirty) {
    ++scored_steps_;
    if (comm_.rank() == 0)
      manager_.on_step(step_bytes_, std::chrono::duration<double>(now - step_start_).count());
  }
  step_bytes_ = 0;
  Status s = !dirty && scored_steps_ % manager_.steps_per_sample() == 0 ? agree() : Status::OK();
  // The decision's own time is not the next step's.
  step_start_ = std::chrono::steady_clock::now();
  return s;
}

Status Autotuner::agree() {
  std::array<double, kWords> words{};
  AutotuneRow row;
  if (comm_.rank() == 0) {
    row = manager_.finish_sample(steps_);
    row.algorithms = algorithms_ ? algorithms_() : std::string();
    log_.write(row);
    const AutotuneValues& v = manager_.current();
    words = {static_cast<double>(v.fusion_threshold_bytes),
             v.cycle_time_ms,
             v.cache_enabled ? 1.0 : 0.0,
             v.hierarchical_allreduce ? 1.0 : 0.0,
             v.hierarchical_allgather ? 1.0 : 0.0,
             manager_.converged() ? 1.0 : 0.0};
  }
  if (comm_.size() > 1) {
    Status s = agree_doubles(comm_, words.data(), kWords, ReduceOp::kSum, kDecisionTag,
                             options_.timeout_s);
    if (!s.ok()) return s.with_context(" (autotune: agreeing on the next configuration)");
  }
  AutotuneValues v;
  v.fusion_threshold_bytes = static_cast<int64_t>(words[0]);
  v.cycle_time_ms = words[1];
  v.cache_enabled = words[2] != 0;
  v.hierarchical_allreduce = words[3] != 0;
  v.hierarchical_allgather = words[4] != 0;
  const bool converged = words[5] != 0;
  apply_(v);
  MutexLock lock(&mu_);
  state_.samples += 1;
  state_.fusion_threshold_bytes = v.fusion_threshold_bytes;
  state_.cycle_time_ms = v.cycle_time_ms;
  state_.cache_enabled = v.cache_enabled;
  state_.hierarchical_allreduce = v.hierarchical_allreduce;
  state_.hierarchical_allgather = v.hierarchical_allgather;
  state_.history.push_back({steps_, v.fusion_threshold_bytes, v.cycle_time_ms, v.cache_enabled});
  if (comm_.rank() == 0) state_.score = manager_.best().score;
  if (!converged) return Status::OK();
  active_ = false;
  state_.converged = true;
  state_.algorithms = algorithms_ ? algorithms_() : std::string();
  if (comm_.rank() == 0) {
    AutotuneRow best = manager_.best();
    best.algorithms = state_.algorithms;
    log_.write(best);
    log_.close();
    HORA_LOG(kInfo) << "autotune: converged after " << state_.samples << " samples (" << steps_
                    << " steps): HORA_FUSION_THRESHOLD=" << v.fusion_threshold_bytes
                    << " HORA_CYCLE_TIME_MS=" << v.cycle_time_ms << " response cache "
                    << (v.cache_enabled ? "on" : "off") << ", " << best.score << " bytes/s"
                    << (state_.algorithms.empty() ? "" : ", allreduce " + state_.algorithms);
  }
  return Status::OK();
}

}  // namespace engine
}  // namespace hora
