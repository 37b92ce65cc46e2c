// Unit tests of Blacklist: without a cooldown range a failed host stays out; with one it comes
// back after an exponentially growing, capped cooldown.
#include "launcher/blacklist.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hora {
namespace launcher {
namespace {

TEST(Blacklist, WithoutRangeAHostStaysOut) {
  Blacklist b(std::nullopt, [] { return 0.5; });
  EXPECT_FALSE(b.is_blacklisted("a", 0));
  EXPECT_TRUE(std::isinf(b.record_failure("a", 1)));
  EXPECT_TRUE(b.is_blacklisted("a", 1e9));
  EXPECT_FALSE(b.is_blacklisted("b", 1));
  EXPECT_EQ(b.failures("a"), 1);
  EXPECT_FALSE(b.next_return(2));
}

TEST(Blacklist, CooldownDoublesWithEachFailureUpToMax) {
  double jitter = 0;
  Blacklist b(std::make_pair(10.0, 50.0), [&] { return jitter; });
  EXPECT_EQ(b.record_failure("a", 0), 10);
  EXPECT_TRUE(b.is_blacklisted("a", 9.9));
  EXPECT_FALSE(b.is_blacklisted("a", 10));
  ASSERT_TRUE(b.next_return(5));
  EXPECT_EQ(*b.next_return(5), 10);
  EXPECT_EQ(b.record_failure("a", 100), 20);
  EXPECT_EQ(b.record_failure("a", 200), 40);
  EXPECT_EQ(b.record_failure("a", 300), 50);  // capped at MAX
  jitter = 0.5;
  EXPECT_EQ(b.record_failure("b", 0), 15);  // MIN + MIN * jitter
  EXPECT_EQ(b.failures("a"), 4);
}

TEST(Blacklist, ZeroRangeMeansBackAtOnce) {
  Blacklist b(std::make_pair(0.0, 0.0), [] { return 0.9; });
  EXPECT_EQ(b.record_failure("a", 3), 0);
  EXPECT_FALSE(b.is_blacklisted("a", 3));
}

}  // namespace
}  // namespace launcher
}  // namespace hora
