#include "hora/logging.h"

#include <gtest/gtest.h>

namespace hora {
namespace {

TEST(LoggingTest, ParseLevels) {
  EXPECT_EQ(parse_log_level("trace").value(), LogLevel::kTrace);
  EXPECT_EQ(parse_log_level("warn").value(), LogLevel::kWarning);
  EXPECT_FALSE(parse_log_level("loud").ok());
}

TEST(LoggingTest, LevelFiltersAndRankPrefixes) {
  set_log_level(LogLevel::kInfo);
  EXPECT_FALSE(log_enabled(LogLevel::kDebug));
  EXPECT_TRUE(log_enabled(LogLevel::kError));
  set_log_rank(3);
  testing::internal::CaptureStderr();
  HORA_LOG(kInfo) << "hello " << 42;
  HORA_LOG(kDebug) << "hidden";
  std::string out = testing::internal::GetCapturedStderr();
  EXPECT_EQ(out, "[hora 3 I] hello 42\n");
  set_log_rank(-1);
  set_log_level(LogLevel::kWarning);
}

TEST(LoggingDeathTest, CheckPrintsBothValues) {
  int a = 3, b = 4;
  EXPECT_DEATH({ HORA_CHECK_EQ(a, b) << "context"; }, "3 vs 4");
}

}  // namespace
}  // namespace hora
