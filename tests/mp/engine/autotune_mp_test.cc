// HORA_AUTOTUNE=1 in a real job: a training-like loop (the same named allreduces every step,
// of several sizes) runs until the search converges; every allreduce gives the closed-form
// result while the fusion threshold, cycle time and response cache change under it, and every
// rank applied the same values at the same steps (each rank's history, allgathered, equals
// rank 0's).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hora/hora.h"

namespace hora {
namespace {

TensorView view(std::vector<float>& v) {
  return TensorView::flat(v.data(), DataType::kFloat32, static_cast<int64_t>(v.size())).value();
}

// One step: `kTensors` allreduces (sum) enqueued together, each checked.
void run_step(int step) {
  constexpr int kTensors = 12;
  const int n = hora::size();
  const float ranks = static_cast<float>(n) * static_cast<float>(n + 1) / 2;
  std::vector<std::vector<float>> ins(kTensors), outs(kTensors);
  std::vector<Handle> handles;
  handles.reserve(kTensors);
  for (int t = 0; t < kTensors; ++t) {
    const size_t count = size_t{256} << (t % 7);  // 1 KiB .. 64 KiB
    ins[t].assign(count, static_cast<float>((hora::rank() + 1) * (t + 1)));
    outs[t].assign(count, -1.0f);
    handles.push_back(hora::allreduce_async("grad/" + std::to_string(t), view(ins[t]),
                                            view(outs[t]), ReduceOp::kSum));
  }
  for (int t = 0; t < kTensors; ++t) {
    ASSERT_TRUE(handles[t].wait().ok()) << "step " << step << " tensor " << t;
    for (float v : outs[t]) ASSERT_EQ(v, ranks * static_cast<float>(t + 1)) << "step " << step;
  }
}

// This rank's history as doubles: per change, step, fusion threshold, cycle time, cache.
std::vector<double> flatten(const AutotuneState& s) {
  std::vector<double> out;
  for (const AutotuneState::Change& c : s.history) {
    out.push_back(static_cast<double>(c.step));
    out.push_back(static_cast<double>(c.fusion_threshold_bytes));
    out.push_back(c.cycle_time_ms);
    out.push_back(c.cache_enabled ? 1.0 : 0.0);
  }
  return out;
}

TEST(AutotuneMp, EveryRankAppliesTheSameValuesAtTheSameStepAndResultsStayExact) {
  ASSERT_TRUE(hora::autotune_state().enabled);
  int step = 0;
  for (; step < 400 && !hora::autotune_state().converged; ++step) {
    run_step(step);
    if (::testing::Test::HasFatalFailure()) return;
  }
  const AutotuneState s = hora::autotune_state();
  ASSERT_TRUE(s.converged) << "not converged after " << step << " steps, " << s.samples
                           << " samples";
  ASSERT_FALSE(s.history.empty());
  // The final values are the last change's, and in force: more steps stay exact.
  EXPECT_EQ(s.history.back().fusion_threshold_bytes, s.fusion_threshold_bytes);
  for (int k = 0; k < 3; ++k) run_step(step + k);

  std::vector<double> mine = flatten(s);
  const int64_t len = static_cast<int64_t>(mine.size());
  StatusOr<CollectiveResult> all = hora::allgather(
      "autotune/history", TensorView::flat(mine.data(), DataType::kFloat64, len).value());
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  ASSERT_EQ(all->data.size(), mine.size() * sizeof(double) * static_cast<size_t>(hora::size()))
      << "ranks changed values a different number of times";
  const auto* got = reinterpret_cast<const double*>(all->data.data());
  for (int r = 0; r < hora::size(); ++r)
    for (size_t i = 0; i < mine.size(); ++i)
      EXPECT_EQ(got[r * mine.size() + i], got[i]) << "rank " << r << " history word " << i;
}

}  // namespace
}  // namespace hora
