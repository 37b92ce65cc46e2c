// AlgorithmTuner (core/engine/algorithm_tuner.h): its pure parts (size classes, the rotation,
// the median, the decision from agreed figures) and, on in-process ranks, the agreement: ranks
// that time the candidates differently still fix the same algorithm for every class, and the
// allreduces run while tuning give the closed-form result on every rank.
#include "core/engine/algorithm_tuner.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "tests/support/multi_rank.h"

namespace hora {
namespace engine {
namespace {

using collectives::Algorithm;

TEST(AlgorithmTuner, SizeClassIsFloorLog2) {
  EXPECT_EQ(AlgorithmTuner::size_class(0), 0);
  EXPECT_EQ(AlgorithmTuner::size_class(1), 0);
  EXPECT_EQ(AlgorithmTuner::size_class(2), 1);
  EXPECT_EQ(AlgorithmTuner::size_class(3), 1);
  EXPECT_EQ(AlgorithmTuner::size_class(4), 2);
  EXPECT_EQ(AlgorithmTuner::size_class(1023), 9);
  EXPECT_EQ(AlgorithmTuner::size_class(1024), 10);
  EXPECT_EQ(AlgorithmTuner::size_class(std::numeric_limits<size_t>::max()),
            AlgorithmTuner::kClasses - 1);
}

TEST(AlgorithmTuner, RotationCyclesThroughTheCandidates) {
  std::vector<size_t> got;
  for (int64_t n = 0; n < 7; ++n) got.push_back(AlgorithmTuner::rotation(n, 3));
  EXPECT_EQ(got, (std::vector<size_t>{0, 1, 2, 0, 1, 2, 0}));
}

TEST(AlgorithmTuner, Median) {
  EXPECT_EQ(AlgorithmTuner::median({5}), 5);
  EXPECT_EQ(AlgorithmTuner::median({9, 1, 5}), 5);
  EXPECT_EQ(AlgorithmTuner::median({4, 1, 3, 2}), 2.5);
}

TEST(AlgorithmTuner, DecideKeepsTheSelectorsChoiceWithinTheMargin) {
  const std::vector<Algorithm> c = {Algorithm::kRing, Algorithm::kTree,
                                    Algorithm::kRecursiveDoubling};
  // Tree 4% slower than rd: kept. 10% slower: rd.
  EXPECT_EQ(AlgorithmTuner::decide(c, {200, 104, 100}, Algorithm::kTree), 1u);
  EXPECT_EQ(AlgorithmTuner::decide(c, {200, 110, 100}, Algorithm::kTree), 2u);
  // A tie goes to the first candidate; a choice that is not a candidate counts as slowest.
  EXPECT_EQ(AlgorithmTuner::decide(c, {50, 50, 60}, Algorithm::kNative), 0u);
  EXPECT_EQ(AlgorithmTuner::decide(c, {70, 50, 50}, Algorithm::kNative), 1u);
}

// This rank's fake time of `a`: rank r finds candidate (r % m) fastest, so no two adjacent
// ranks agree locally.
double fake_us(int rank, size_t index, size_t m) {
  return 100.0 + 10.0 * static_cast<double>((index + static_cast<size_t>(rank)) % m);
}

class AlgorithmTunerRanks : public ::testing::TestWithParam<int> {};

TEST_P(AlgorithmTunerRanks, DisagreeingTimingsGiveOneChoiceOnEveryRank) {
  const int n = GetParam();
  constexpr int kSamples = 3;
  const std::vector<size_t> sizes = {4, 24, 4096, 100000};
  std::mutex mu;
  std::vector<std::vector<int>> choices(n);  // per rank, per size: the fixed algorithm
  std::vector<std::vector<int>> candidates(n);
  Status s = test_support::run_ranks(n, [&](collectives::Communicator& comm) -> Status {
    AlgorithmTunerOptions o;
    o.samples = kSamples;
    o.timeout_s = 30;
    AlgorithmTuner tuner(comm, o);
    const int rank = comm.rank();
    const std::vector<Algorithm> order = {Algorithm::kRing, Algorithm::kTree,
                                          Algorithm::kRecursiveDoubling};
    std::vector<int> mine;
    collectives::AlgorithmOptions ao;
    ao.deadline = Deadline::after_seconds(30);
    for (size_t bytes : sizes) {
      const int c = AlgorithmTuner::size_class(bytes);
      const size_t count = bytes / sizeof(float);
      // Enough allreduces to finish tuning and run a few with the fixed choice.
      for (int k = 0; k < kSamples * 3 + 4; ++k) {
        const Algorithm peeked = tuner.peek(bytes);
        const TunerPick pick = tuner.take(bytes);
        if (pick.algorithm != peeked) return Status::internal("peek differs from take");
        std::vector<float> in(count), out(count, -1.0f);
        for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>(rank + 1) * (i % 7 + 1);
        HORA_RETURN_IF_ERROR(collectives::run_allreduce(pick.algorithm, comm, in.data(), out.data(),
                                                        count, DataType::kFloat32, ReduceOp::kSum,
                                                        ao));
        const float ranks_sum = static_cast<float>(n) * static_cast<float>(n + 1) / 2;
        for (size_t i = 0; i < count; ++i) {
          if (out[i] != ranks_sum * (i % 7 + 1))
            return Status::internal("wrong result at " + std::to_string(i) + " with " +
                                    collectives::algorithm_name(pick.algorithm));
        }
        size_t index = 0;
        while (index < order.size() && order[index] != pick.algorithm) ++index;
        HORA_RETURN_IF_ERROR(tuner.record(pick, fake_us(rank, index, order.size())));
      }
      if (n > 1 && tuner.decided(c) == Algorithm::kAuto)
        return Status::internal("class " + std::to_string(c) + " not decided");
      mine.push_back(static_cast<int>(tuner.peek(bytes)));
    }
    std::lock_guard<std::mutex> lock(mu);
    choices[rank] = mine;
    return Status::OK();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  for (int r = 1; r < n; ++r) EXPECT_EQ(choices[r], choices[0]) << "rank " << r;
  if (n == 1) return;
  // The agreed figure of candidate i is the max over ranks of fake_us(r, i, 3); the decision
  // is decide() of those, which every rank must have reached.
  std::vector<double> agreed(3, 0);
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < 3; ++i) agreed[i] = std::max(agreed[i], fake_us(r, i, 3));
  const std::vector<Algorithm> order = {Algorithm::kRing, Algorithm::kTree,
                                        Algorithm::kRecursiveDoubling};
  for (size_t k = 0; k < sizes.size(); ++k) {
    const Algorithm selector = collectives::select_allreduce(
                                   size_t{1} << AlgorithmTuner::size_class(sizes[k]), n, "inproc")
                                   .algorithm;
    EXPECT_EQ(choices[0][k],
              static_cast<int>(order[AlgorithmTuner::decide(order, agreed, selector)]))
        << sizes[k] << " B at " << n << " ranks";
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, AlgorithmTunerRanks, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "np" + std::to_string(info.param);
                         });

TEST(AlgorithmTuner, FixedAlgorithmOrOneRankDisablesTuning) {
  Status s = test_support::run_ranks(2, [](collectives::Communicator& comm) -> Status {
    AlgorithmTunerOptions o;
    o.requested = Algorithm::kTree;
    AlgorithmTuner tuner(comm, o);
    if (tuner.enabled()) return Status::internal("enabled with a fixed algorithm");
    for (int k = 0; k < 10; ++k) {
      const TunerPick pick = tuner.take(1024);
      if (pick.algorithm != Algorithm::kTree || pick.size_class != -1)
        return Status::internal("not the fixed algorithm");
    }
    AlgorithmTunerOptions off;
    off.enabled = false;
    AlgorithmTuner disabled(comm, off);
    if (disabled.enabled()) return Status::internal("enabled with HORA_AUTOTUNE=0");
    return Status::OK();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
}

}  // namespace
}  // namespace engine
}  // namespace hora
