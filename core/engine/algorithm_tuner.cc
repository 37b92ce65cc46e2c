#include "core/engine/algorithm_tuner.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>

#include "collectives/algorithms/algorithms.h"
#include "hora/logging.h"

namespace hora {
namespace engine {
namespace {

using collectives::Algorithm;

// Tag of the agreement allreduce ("tune"): distinct from the engine's algorithms' own.
constexpr uint32_t kAgreeTag = 0x74756e65;

size_t class_low_bytes(int size_class) { return size_t{1} << size_class; }

}  // namespace

Status agree_doubles(collectives::Communicator& comm, double* words, size_t count, ReduceOp op,
                     uint32_t tag, double timeout_s) {
  collectives::AlgorithmOptions ao;
  ao.deadline = Deadline::after_seconds(timeout_s);
  ao.tag = tag;
  return collectives::recursive_doubling_allreduce(comm, words, words, count, DataType::kFloat64,
                                                   op, ao);
}

AlgorithmTuner::AlgorithmTuner(collectives::Communicator& comm,
                               const AlgorithmTunerOptions& options)
    : comm_(comm),
      options_(options),
      enabled_(options.enabled && options.samples > 0 && options.requested == Algorithm::kAuto &&
               comm.size() > 1) {}

int AlgorithmTuner::size_class(size_t bytes) {
  int c = 0;
  while (c < kClasses - 1 && (bytes >> (c + 1)) != 0) ++c;
  return c;
}

double AlgorithmTuner::median(std::vector<double> samples) {
  const size_t n = samples.size();
  std::sort(samples.begin(), samples.end());
  return n % 2 == 1 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
}

size_t AlgorithmTuner::decide(const std::vector<Algorithm>& candidates,
                              const std::vector<double>& us, Algorithm static_choice) {
  size_t best = 0;
  for (size_t i = 1; i < us.size(); ++i) {
    if (us[i] < us[best]) best = i;
  }
  const auto it = std::find(candidates.begin(), candidates.end(), static_choice);
  if (it == candidates.end()) return best;
  const size_t kept = static_cast<size_t>(it - candidates.begin());
  return us[kept] > kKeepMargin * us[best] ? best : kept;
}

collectives::Selection AlgorithmTuner::static_selection(size_t bytes) const {
  return collectives::select_allreduce(bytes, comm_.size(), comm_.cost_model(), options_.requested,
                                       options_.topology);
}

AlgorithmTuner::ClassState& AlgorithmTuner::start(int size_class) {
  ClassState& state = classes_[size_class];
  if (state.started) return state;
  state.started = true;
  // The candidates depend on the class only (and the agreed topology): equal on every rank.
  for (const collectives::Selection& s : collectives::explain_allreduce(
           class_low_bytes(size_class), comm_.size(), comm_.cost_model(), options_.topology)) {
    if (s.estimated_us >= 0) state.candidates.push_back(s.algorithm);
  }
  state.us.assign(state.candidates.size(), {});
  if (state.candidates.size() <= 1) {
    // Nothing to choose between: fixed at once (the selector's choice).
    decided_[size_class].store(
        static_cast<uint8_t>(state.candidates.empty()
                                 ? static_selection(class_low_bytes(size_class)).algorithm
                                 : state.candidates.front()),
        std::memory_order_release);
  }
  return state;
}

Algorithm AlgorithmTuner::peek(size_t bytes) {
  if (!enabled_ || bytes == 0) return static_selection(bytes).algorithm;
  const int c = size_class(bytes);
  const Algorithm fixed = decided(c);
  if (fixed != Algorithm::kAuto) return fixed;
  ClassState& state = start(c);
  if (decided(c) != Algorithm::kAuto) return decided(c);
  return state.candidates[rotation(state.taken, state.candidates.size())];
}

TunerPick AlgorithmTuner::take(size_t bytes) {
  TunerPick pick;
  pick.algorithm = peek(bytes);
  if (!enabled_ || bytes == 0) return pick;
  const int c = size_class(bytes);
  if (decided(c) != Algorithm::kAuto) return pick;
  ++classes_[c].taken;
  ++samples_taken_;
  pick.size_class = c;
  return pick;
}

Status AlgorithmTuner::record(const TunerPick& pick, double us) {
  if (pick.size_class < 0) return Status::OK();
  ClassState& state = classes_[pick.size_class];
  const auto it = std::find(state.candidates.begin(), state.candidates.end(), pick.algorithm);
  if (it != state.candidates.end())
    state.us[static_cast<size_t>(it - state.candidates.begin())].push_back(us);
  const int64_t needed =
      static_cast<int64_t>(options_.samples) * static_cast<int64_t>(state.candidates.size());
  if (state.taken < needed) return Status::OK();
  return agree(pick.size_class, state);
}

Status AlgorithmTuner::agree(int size_class, ClassState& state) {
  const size_t m = state.candidates.size();
  std::vector<double> row(m);
  for (size_t i = 0; i < m; ++i) {
    row[i] = state.us[i].empty() ? std::numeric_limits<double>::max() : median(state.us[i]);
    if (skew_) row[i] = skew_(state.candidates[i], size_class, row[i]);
  }
  Status s = agree_doubles(comm_, row.data(), m, ReduceOp::kMax, kAgreeTag, options_.timeout_s);
  if (!s.ok()) return s.with_context(" (allreduce autotune: agreeing on the timings)");
  const Algorithm static_choice = static_selection(class_low_bytes(size_class)).algorithm;
  const Algorithm chosen = state.candidates[decide(state.candidates, row, static_choice)];
  if (log_enabled(LogLevel::kInfo)) {
    std::string figures;
    for (size_t i = 0; i < m; ++i) {
      char part[64];
      std::snprintf(part, sizeof part, " %s %.1f", collectives::algorithm_name(state.candidates[i]),
                    row[i]);
      figures += part;
    }
    HORA_LOG(kInfo) << "allreduce autotune: " << class_low_bytes(size_class) << "-"
                    << 2 * class_low_bytes(size_class) - 1 << " B: us per call (median of "
                    << options_.samples << ", slowest rank):" << figures << " -> "
                    << collectives::algorithm_name(chosen) << " (selector's choice "
                    << collectives::algorithm_name(static_choice) << "; HORA_AUTOTUNE=0 disables)";
  }
  state.us.clear();
  state.us.shrink_to_fit();
  decided_[size_class].store(static_cast<uint8_t>(chosen), std::memory_order_release);
  return Status::OK();
}

}  // namespace engine
}  // namespace hora
