// The engine's online allreduce tuning (core/engine/algorithm_tuner.h) in a real job: every
// rank's timings are skewed differently (each rank finds another algorithm fastest), yet every
// rank fixes the same algorithm for every size class, the one the closed-form agreed figures
// give, and every allreduce run while tuning (lone tensors and fused groups) gives the
// closed-form result. One rank: tuning is off.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "collectives/selector.h"
#include "core/context.h"
#include "core/context_access.h"
#include "core/engine/algorithm_tuner.h"
#include "core/engine/engine.h"
#include "core/engine_access.h"
#include "hora/hora.h"

namespace hora {
namespace {

using collectives::Algorithm;
using engine::AlgorithmTuner;

TensorView view(std::vector<float>& v) {
  return TensorView::flat(v.data(), DataType::kFloat32, static_cast<int64_t>(v.size())).value();
}
TensorView view(std::vector<double>& v) {
  return TensorView::flat(v.data(), DataType::kFloat64, static_cast<int64_t>(v.size())).value();
}

// Rank r's figure for algorithm a: each rank prefers another algorithm, and the last rank
// finds the ring twice as slow (one slow rank decides: the agreed figure is the slowest's).
double skewed_us(Algorithm a, int rank, int n) {
  return 1000.0 + 100.0 * ((static_cast<int>(a) + rank) % 5) +
         (rank == n - 1 && a == Algorithm::kRing ? 1000.0 : 0.0);
}

int samples() {
  const char* v = std::getenv("HORA_AUTOTUNE_SAMPLES");
  return v != nullptr ? std::atoi(v) : 3;
}

float input(size_t i, int r) { return static_cast<float>((r + 1) * (i % 5 + 1)); }

// Runs `calls` allreduces of `count` floats (kSum), checking each result.
void run_lone(const std::string& name, size_t count, int calls) {
  const int n = hora::size();
  const float ranks = static_cast<float>(n) * static_cast<float>(n + 1) / 2;
  for (int k = 0; k < calls; ++k) {
    std::vector<float> in(count), out(count, -1.0f);
    for (size_t i = 0; i < count; ++i) in[i] = input(i, hora::rank());
    ASSERT_TRUE(hora::allreduce(name, view(in), view(out), ReduceOp::kSum).ok());
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(out[i], ranks * (i % 5 + 1)) << name << " call " << k << " at " << i;
  }
}

// The same with a group of two tensors of `count` floats each (one fused bucket).
void run_group(const std::string& name, size_t count, int calls) {
  const int n = hora::size();
  const float ranks = static_cast<float>(n) * static_cast<float>(n + 1) / 2;
  for (int k = 0; k < calls; ++k) {
    std::vector<float> a(count), b(count);
    for (size_t i = 0; i < count; ++i) a[i] = b[i] = input(i, hora::rank());
    ASSERT_TRUE(hora::grouped_allreduce({name + "/a", name + "/b"}, {view(a), view(b)},
                                        {view(a), view(b)}, ReduceOp::kSum)
                    .ok());
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(a[i], ranks * (i % 5 + 1)) << name << " call " << k << " at " << i;
      ASSERT_EQ(b[i], a[i]);
    }
  }
}

TEST(AlgorithmTunerMp, SkewedRanksFixOneChoiceAndResultsStayExact) {
  std::shared_ptr<engine::Engine> eng = detail::engine();
  ASSERT_NE(eng, nullptr);
  AlgorithmTuner& tuner = eng->algorithm_tuner_for_test();
  const int rank = hora::rank();
  const int n = hora::size();
  tuner.set_skew_for_test([rank, n](Algorithm a, int, double) { return skewed_us(a, rank, n); });
  const std::vector<size_t> lone_counts = {1, 100, 65536};  // 4 B, 400 B, 256 KiB
  const size_t group_count = 512;                           // 2 x 2 KiB fused: 4 KiB
  // Enough calls to finish tuning with any candidate count (at most 5), then some more.
  const int calls = samples() * 5 + 2;
  for (size_t count : lone_counts) run_lone("tune/" + std::to_string(count), count, calls);
  run_group("tune/group", group_count, calls);

  std::vector<size_t> bytes;
  for (size_t count : lone_counts) bytes.push_back(count * sizeof(float));
  bytes.push_back(2 * group_count * sizeof(float));
  std::vector<double> mine;
  for (size_t b : bytes)
    mine.push_back(static_cast<double>(tuner.decided(AlgorithmTuner::size_class(b))));
  if (n == 1) {
    EXPECT_FALSE(tuner.enabled());
    for (double d : mine) EXPECT_EQ(d, static_cast<double>(Algorithm::kAuto));
    return;
  }
  ASSERT_TRUE(tuner.enabled());
  std::vector<double> low = mine, high = mine;
  ASSERT_TRUE(hora::allreduce("tune/check/min", view(low), view(low), ReduceOp::kMin).ok());
  ASSERT_TRUE(hora::allreduce("tune/check/max", view(high), view(high), ReduceOp::kMax).ok());
  EXPECT_EQ(low, high) << "ranks disagree on the tuned choices";

  // The closed form: per candidate, the slowest rank's skewed figure; then decide().
  Context* context = detail::context();
  const collectives::Topology* topology = &context->topology();
  const std::string model = context->communicator().cost_model();
  for (size_t k = 0; k < bytes.size(); ++k) {
    const size_t low_bytes = size_t{1} << AlgorithmTuner::size_class(bytes[k]);
    std::vector<Algorithm> candidates;
    for (const collectives::Selection& s :
         collectives::explain_allreduce(low_bytes, n, model, topology))
      if (s.estimated_us >= 0) candidates.push_back(s.algorithm);
    ASSERT_FALSE(candidates.empty());
    Algorithm expected = candidates.front();
    if (candidates.size() > 1) {
      std::vector<double> agreed;
      for (Algorithm a : candidates) {
        double slowest = 0;
        for (int r = 0; r < n; ++r) slowest = std::max(slowest, skewed_us(a, r, n));
        agreed.push_back(slowest);
      }
      const Algorithm selector =
          collectives::select_allreduce(low_bytes, n, model, Algorithm::kAuto, topology).algorithm;
      expected = candidates[AlgorithmTuner::decide(candidates, agreed, selector)];
    }
    EXPECT_EQ(mine[k], static_cast<double>(expected))
        << bytes[k] << " B: tuned " << collectives::algorithm_name(static_cast<Algorithm>(mine[k]))
        << ", expected " << collectives::algorithm_name(expected);
  }
}

}  // namespace
}  // namespace hora
