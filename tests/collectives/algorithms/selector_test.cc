// The selector without any communication: names, parsing, the override, and that the cost
// model's choices follow its shape (rd for tiny messages, ring for large ones).
#include "collectives/selector.h"

#include <gtest/gtest.h>

namespace hora {
namespace collectives {
namespace {

TEST(SelectorTest, ParsesEveryNameAndRoundTrips) {
  for (Algorithm a : {Algorithm::kAuto, Algorithm::kRing, Algorithm::kTree,
                      Algorithm::kRecursiveDoubling, Algorithm::kNative}) {
    auto parsed = parse_algorithm(algorithm_name(a));
    ASSERT_TRUE(parsed.ok()) << algorithm_name(a);
    EXPECT_EQ(parsed.value(), a);
  }
  auto rd = parse_algorithm("recursive_doubling");
  ASSERT_TRUE(rd.ok());
  EXPECT_EQ(rd.value(), Algorithm::kRecursiveDoubling);
}

TEST(SelectorTest, UnknownNameIsAnErrorNamingValueAndVariable) {
  auto parsed = parse_algorithm("bcube");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(parsed.status().message().find("bcube"), std::string::npos);
  EXPECT_NE(parsed.status().message().find("HORA_ALLREDUCE_ALGO"), std::string::npos);
  EXPECT_FALSE(parse_algorithm("").ok());
  EXPECT_FALSE(parse_algorithm("Ring").ok());
}

TEST(SelectorTest, OverrideWins) {
  for (Algorithm a :
       {Algorithm::kRing, Algorithm::kTree, Algorithm::kRecursiveDoubling, Algorithm::kNative}) {
    Selection s = select_allreduce(8, 4, "gloo", a);
    EXPECT_EQ(s.algorithm, a);
    EXPECT_TRUE(s.is_override);
  }
  EXPECT_FALSE(select_allreduce(8, 4, "gloo").is_override);
}

TEST(SelectorTest, SmallMessagesUseRecursiveDoublingLargeUseRing) {
  // MPI's own small allreduce over shared memory costs a few us: native may win there.
  for (int ranks : {2, 3, 4, 8}) {
    EXPECT_NE(select_allreduce(8, ranks, "mpi").algorithm, Algorithm::kRing) << ranks;
    EXPECT_EQ(select_allreduce(64u << 20, ranks, "mpi").algorithm, Algorithm::kRing) << ranks;
  }
  for (const char* backend : {"gloo", "builtin", "inproc"}) {
    for (int ranks : {2, 4, 8}) {
      EXPECT_EQ(select_allreduce(8, ranks, backend).algorithm, Algorithm::kRecursiveDoubling)
          << backend << " " << ranks;
    }
    // Not a power of two: rd pays a fold in and out, so the tree (log2 n hops each way) may
    // tie or win; never the ring's 2 (n - 1) latencies.
    for (int ranks : {3, 5, 7}) {
      Algorithm a = select_allreduce(8, ranks, backend).algorithm;
      EXPECT_TRUE(a == Algorithm::kRecursiveDoubling || a == Algorithm::kTree)
          << backend << " " << ranks << ": " << algorithm_name(a);
    }
    for (int ranks : {2, 3, 4, 8}) {
      EXPECT_EQ(select_allreduce(64u << 20, ranks, backend).algorithm, Algorithm::kRing)
          << backend << " " << ranks;
    }
  }
}

TEST(SelectorTest, GlooNativeIsNeverChosenOverHoraAtTheMeasuredCosts) {
  // Gloo's built-in allreduce: 90+ us at 4 B, ~1.2 GB/s busbw (issue 4's figures).
  for (size_t bytes = 4; bytes <= (256u << 20); bytes *= 4) {
    EXPECT_NE(select_allreduce(bytes, 4, "gloo").algorithm, Algorithm::kNative) << bytes;
  }
}

TEST(SelectorTest, MpiNativeCollapseAtLargeSizesIsAvoided) {
  EXPECT_EQ(select_allreduce(256u << 20, 4, "mpi").algorithm, Algorithm::kRing);
  EXPECT_GT(estimate_allreduce_us(Algorithm::kNative, "mpi", 256u << 20, 4),
            estimate_allreduce_us(Algorithm::kRing, "mpi", 256u << 20, 4));
}

TEST(SelectorTest, BackendsWithoutNative) {
  EXPECT_LT(estimate_allreduce_us(Algorithm::kNative, "builtin", 1024, 4), 0);
  EXPECT_LT(estimate_allreduce_us(Algorithm::kNative, "inproc", 1024, 4), 0);
  for (size_t bytes : {size_t{8}, size_t{1} << 20, size_t{256} << 20}) {
    EXPECT_NE(select_allreduce(bytes, 4, "builtin").algorithm, Algorithm::kNative);
  }
}

// The GPU rows: on nccl auto takes ncclAllReduce at every size and rank count, while hora's
// algorithms (over NCCL's point to point with the CUDA reduce kernel) stay available as
// overrides, their estimates growing with the bytes.
TEST(SelectorTest, NcclPicksNativeAndKeepsHoraAlgorithmsAsOverrides) {
  for (int ranks : {2, 3, 4, 8}) {
    for (size_t bytes : {size_t{8}, size_t{64} << 10, size_t{1} << 20, size_t{256} << 20}) {
      EXPECT_EQ(select_allreduce(bytes, ranks, "nccl").algorithm, Algorithm::kNative)
          << bytes << " B on " << ranks << " ranks";
      for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kRecursiveDoubling}) {
        const double small = estimate_allreduce_us(a, "nccl", bytes, ranks);
        EXPECT_GT(small, 0) << algorithm_name(a);
        EXPECT_GT(estimate_allreduce_us(a, "nccl", bytes * 2, ranks), small) << algorithm_name(a);
      }
    }
  }
  const Selection ring = select_allreduce(1 << 20, 4, "nccl", Algorithm::kRing);
  EXPECT_EQ(ring.algorithm, Algorithm::kRing);
  EXPECT_TRUE(ring.is_override);
  EXPECT_GT(ring.estimated_us, 0);
}

TEST(SelectorTest, EstimatesGrowWithBytesAndExplainListsEveryCandidate) {
  for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kRecursiveDoubling}) {
    double previous = 0;
    for (size_t bytes = 1; bytes <= (64u << 20); bytes *= 8) {
      double t = estimate_allreduce_us(a, "gloo", bytes, 4);
      EXPECT_GE(t, previous) << algorithm_name(a) << " " << bytes;
      previous = t;
    }
    EXPECT_EQ(estimate_allreduce_us(a, "gloo", 0, 4), 0);
    EXPECT_EQ(estimate_allreduce_us(a, "gloo", 1024, 1), 0);
  }
  auto all = explain_allreduce(4096, 4, "gloo");
  ASSERT_EQ(all.size(), 4u);
  Selection chosen = select_allreduce(4096, 4, "gloo");
  for (const Selection& s : all) {
    if (s.estimated_us >= 0) {
      EXPECT_LE(chosen.estimated_us, s.estimated_us);
    }
  }
}

TEST(SelectorTest, BuiltinCrossoverIsWhereHoraBenchMeasuredIt) {
  // hora-bench sweeps (see selector.cc): rd fastest up to 128 KiB, ring from 256 KiB, at
  // 2 and 4 ranks.
  for (int ranks : {2, 4}) {
    EXPECT_EQ(select_allreduce(64 * 1024, ranks, "builtin").algorithm,
              Algorithm::kRecursiveDoubling)
        << ranks;
    EXPECT_EQ(select_allreduce(1u << 20, ranks, "builtin").algorithm, Algorithm::kRing) << ranks;
  }
}

TEST(SelectorTest, BuiltinSharedMemoryPrefersItsNativeAllreduce) {
  // shm_allreduce_bench (see selector.cc): the shared-memory native allreduce beats hora's
  // ring at every size measured; the point-to-point row keeps hora's algorithms.
  for (int ranks : {2, 4}) {
    for (size_t bytes : {size_t{8}, size_t{64} << 10, size_t{1} << 20, size_t{256} << 20}) {
      EXPECT_EQ(select_allreduce(bytes, ranks, "builtin-shm").algorithm, Algorithm::kNative)
          << bytes << " B on " << ranks;
      EXPECT_NE(select_allreduce(bytes, ranks, "builtin").algorithm, Algorithm::kNative);
    }
  }
}

TEST(SelectorTest, TreeBeatsRingAtMidSizesOnManyRanks) {
  // Ring pays 2 (n - 1) latencies; on 64 ranks a 64 KiB message is latency-bound.
  EXPECT_LT(estimate_allreduce_us(Algorithm::kTree, "gloo", 64 * 1024, 64),
            estimate_allreduce_us(Algorithm::kRing, "gloo", 64 * 1024, 64));
}

}  // namespace
}  // namespace collectives
}  // namespace hora
