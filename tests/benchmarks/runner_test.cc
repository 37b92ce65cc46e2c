// The timing loop's arithmetic: how many calls --min-ms adds to a round, and the statistics.
#include "benchmarks/hora_bench/runner.h"

#include <gtest/gtest.h>

namespace hora {
namespace bench {
namespace {

TEST(MoreIterationsTest, FillsTheRoundAtThePaceOfTheTimedCalls) {
  // 20 calls of 0.5 us took 10 us; 5 ms needs 9,980 more.
  EXPECT_EQ(more_iterations(20, 10, 5000), 9980);
  // A partial call rounds up: 10 calls in 30 us, 100 us wanted: 70 us more at 3 us a call.
  EXPECT_EQ(more_iterations(10, 30, 100), 24);
}

TEST(MoreIterationsTest, NoneWhereTheRoundIsLongEnoughOrNoneIsAsked) {
  EXPECT_EQ(more_iterations(20, 5000, 5000), 0);
  EXPECT_EQ(more_iterations(20, 9000, 5000), 0);
  EXPECT_EQ(more_iterations(20, 10, 0), 0);
  EXPECT_EQ(more_iterations(0, 10, 5000), 0);
}

TEST(MoreIterationsTest, BoundedWhereTheClockReadsNothing) {
  // A clock that read 0 for 20 calls must not ask for an unbounded count.
  EXPECT_EQ(more_iterations(20, 0, 60000 * 1e3), kMaxIterationsPerRound - 20);
  EXPECT_EQ(more_iterations(20, 1e-9, 5000), kMaxIterationsPerRound - 20);
}

TEST(TimeStatsTest, MedianPercentileAndMax) {
  const TimeStats odd = time_stats({5, 1, 3});
  EXPECT_DOUBLE_EQ(odd.median_us, 3);
  EXPECT_DOUBLE_EQ(odd.max_us, 5);
  const TimeStats even = time_stats({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(even.median_us, 2.5);
  std::vector<double> hundred;
  for (int i = 1; i <= 100; ++i) hundred.push_back(i);
  EXPECT_DOUBLE_EQ(time_stats(hundred).p99_us, 99);
}

}  // namespace
}  // namespace bench
}  // namespace hora
