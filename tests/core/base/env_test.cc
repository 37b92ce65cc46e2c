#include "core/base/env.h"

#include <gtest/gtest.h>

namespace hora {
namespace {

TEST(EnvTest, Bytes) {
  EXPECT_EQ(parse_bytes("V", "0").value(), 0);
  EXPECT_EQ(parse_bytes("V", "1048576").value(), 1048576);
  EXPECT_EQ(parse_bytes("V", "64K").value(), 64 * 1024);
  EXPECT_EQ(parse_bytes("V", "64M").value(), int64_t{64} << 20);
  EXPECT_EQ(parse_bytes("V", "64MiB").value(), int64_t{64} << 20);
  EXPECT_EQ(parse_bytes("V", "2g").value(), int64_t{2} << 30);
  EXPECT_EQ(parse_bytes("V", "100B").value(), 100);
  for (const char* bad :
       {"", "abc", "-5", "5X", "64MB5", " 5", "99999999999999999999", "9000000000G"}) {
    auto r = parse_bytes("HORA_FUSION_THRESHOLD", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("HORA_FUSION_THRESHOLD"), std::string::npos);
    EXPECT_NE(r.status().message().find(std::string("'") + bad + "'"), std::string::npos);
  }
}

TEST(EnvTest, Bool) {
  for (const char* t : {"1", "true", "TRUE", "yes", "on"}) EXPECT_TRUE(parse_bool("V", t).value());
  for (const char* f : {"0", "false", "No", "off"}) EXPECT_FALSE(parse_bool("V", f).value());
  auto r = parse_bool("HORA_SHM", "maybe");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("HORA_SHM='maybe'"), std::string::npos);
}

TEST(EnvTest, IntAndDouble) {
  EXPECT_EQ(parse_int("V", "42", 0, 100).value(), 42);
  EXPECT_FALSE(parse_int("V", "101", 0, 100).ok());
  EXPECT_FALSE(parse_int("V", "4x", 0, 100).ok());
  EXPECT_FALSE(parse_int("V", "", 0, 100).ok());
  EXPECT_DOUBLE_EQ(parse_double("V", "0.5", 0, 1).value(), 0.5);
  EXPECT_FALSE(parse_double("V", "nan", 0, 1).ok());
  EXPECT_FALSE(parse_double("V", "inf", 0, 1e9).ok());
  EXPECT_FALSE(parse_double("V", "2", 0, 1).ok());
  EXPECT_FALSE(parse_double("V", "1s", 0, 10).ok());
}

}  // namespace
}  // namespace hora
