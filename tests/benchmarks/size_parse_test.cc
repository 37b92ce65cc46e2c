// hora-bench's size parsing: suffixes, case, units and every way a size can be wrong.
#include "benchmarks/hora_bench/size_parse.h"

#include <gtest/gtest.h>

namespace hora {
namespace bench {
namespace {

TEST(SizeParseTest, PlainAndSuffixed) {
  EXPECT_EQ(parse_size("0", "-b").value(), 0u);
  EXPECT_EQ(parse_size("8", "-b").value(), 8u);
  EXPECT_EQ(parse_size("64K", "-b").value(), 64u << 10);
  EXPECT_EQ(parse_size("64k", "-b").value(), 64u << 10);
  EXPECT_EQ(parse_size("1M", "-b").value(), 1u << 20);
  EXPECT_EQ(parse_size("256M", "-e").value(), 256u << 20);
  EXPECT_EQ(parse_size("4G", "-e").value(), size_t{4} << 30);
  EXPECT_EQ(parse_size("1MB", "-e").value(), 1u << 20);
  EXPECT_EQ(parse_size("1MiB", "-e").value(), 1u << 20);
  EXPECT_EQ(parse_size("16B", "-e").value(), 16u);
}

TEST(SizeParseTest, RejectsBadText) {
  for (const char* bad : {"", "-1", "M", "1X", "1MM", "1Kb2", "1.5M", "abc", "1BB"}) {
    auto s = parse_size(bad, "-b");
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.status().message().find("-b"), std::string::npos) << s.status().message();
    EXPECT_NE(s.status().message().find(std::string("'") + bad + "'"), std::string::npos)
        << s.status().message();
  }
}

TEST(SizeParseTest, RejectsOverflow) {
  EXPECT_FALSE(parse_size("99999999999999999999", "-e").ok());
  EXPECT_FALSE(parse_size("17179869184G", "-e").ok());  // 2^34 G = 2^64
}

TEST(SizeParseTest, Formats) {
  EXPECT_EQ(format_size(8), "8 B");
  EXPECT_EQ(format_size(1024), "1 KiB");
  EXPECT_EQ(format_size(3 << 19), "1.5 MiB");
  EXPECT_EQ(format_size(size_t{1} << 30), "1 GiB");
  EXPECT_EQ(format_size_short(64 << 10), "64K");
  EXPECT_EQ(format_size_short(256u << 20), "256M");
  EXPECT_EQ(format_size_short(4), "4");
}

}  // namespace
}  // namespace bench
}  // namespace hora
