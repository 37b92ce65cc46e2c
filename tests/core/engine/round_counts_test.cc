// The negotiation round's counting words (core/engine/round_counts.h), summed in process over
// every rank of the largest job hora allows, as the round's sum-allreduce would.
#include "core/engine/round_counts.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "core/layout.h"

namespace hora {
namespace engine {
namespace {

using round_counts::decode_position;
using round_counts::max_position_word;
using round_counts::position_word;

// The sum of every rank's word when rank r is ready/holds/invalidates as the predicates say,
// checked against the int64 range at every step (the reduction adds in some order; any
// prefix of the sum must fit too, which it does because every word is non-negative).
template <typename Ready, typename Holds, typename Invalidates>
int64_t sum_over_ranks(int size, Ready ready, Holds holds, Invalidates invalidates) {
  int64_t sum = 0;
  for (int r = 0; r < size; ++r) {
    const int64_t w = position_word(ready(r) || holds(r), holds(r), invalidates(r), size);
    EXPECT_LE(sum, std::numeric_limits<int64_t>::max() - w) << "overflow at rank " << r;
    sum += w;
  }
  return sum;
}

TEST(RoundCounts, EveryRankEverythingAtTheLargestJob) {
  const int n = kMaxRanks;
  const auto all = [](int) { return true; };
  const int64_t sum = sum_over_ranks(n, all, all, all);
  EXPECT_EQ(sum, max_position_word(n));
  const auto c = decode_position(sum, n);
  EXPECT_EQ(c.ready, n);
  EXPECT_EQ(c.held, n);
  EXPECT_EQ(c.invalidated, n);
}

TEST(RoundCounts, MixedCountsAtTheLargestJob) {
  const int n = kMaxRanks;
  // Every rank ready, every third holding, the last one alone invalidating.
  const int64_t sum = sum_over_ranks(
      n, [](int) { return true; }, [](int r) { return r % 3 == 0; },
      [](int r) { return r == kMaxRanks - 1; });
  const auto c = decode_position(sum, n);
  EXPECT_EQ(c.ready, n);
  EXPECT_EQ(c.held, (n + 2) / 3);
  EXPECT_EQ(c.invalidated, 1);
  // One rank short of ready: not agreed, and not mistaken for anything else.
  const int64_t short_one = sum_over_ranks(
      n, [](int r) { return r != 7; }, [](int r) { return r == 0; }, [](int) { return false; });
  const auto d = decode_position(short_one, n);
  EXPECT_EQ(d.ready, n - 1);
  EXPECT_EQ(d.held, 1);
  EXPECT_EQ(d.invalidated, 0);
}

TEST(RoundCounts, JoinedRanksAreReadyWithoutHolding) {
  for (int n : {1, 2, 3, 7, 1290, 1291}) {
    const int64_t sum = sum_over_ranks(
        n, [](int) { return true; }, [](int r) { return r == 0; }, [](int) { return false; });
    const auto c = decode_position(sum, n);
    EXPECT_EQ(c.ready, n) << n;
    EXPECT_EQ(c.held, 1) << n;
    EXPECT_EQ(c.invalidated, 0) << n;
  }
}

// What the int64 words fixed: int32 words held every job only up to 1,289 ranks.
TEST(RoundCounts, Int32WordsWouldOverflowFrom1290Ranks) {
  EXPECT_LE(max_position_word(1289), int64_t{std::numeric_limits<int32_t>::max()});
  EXPECT_GT(max_position_word(1290), int64_t{std::numeric_limits<int32_t>::max()});
}

}  // namespace
}  // namespace engine
}  // namespace hora
