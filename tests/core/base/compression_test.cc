#include "hora/compression.h"

#include <gtest/gtest.h>

namespace hora {
namespace {

TEST(CompressionTest, NamesAndAliasesParse) {
  EXPECT_EQ(parse_compression("none").value(), Compression::kNone);
  EXPECT_EQ(parse_compression("fp16").value(), Compression::kFloat16);
  EXPECT_EQ(parse_compression("float16").value(), Compression::kFloat16);
  EXPECT_EQ(parse_compression("bf16").value(), Compression::kBFloat16);
  EXPECT_EQ(parse_compression("bfloat16").value(), Compression::kBFloat16);
  for (int i = 0; i < kNumCompressions; ++i) {
    const Compression c = static_cast<Compression>(i);
    EXPECT_EQ(parse_compression(compression_name(c)).value(), c);
    EXPECT_EQ(compression_from_int(i).value(), c);
  }
}

TEST(CompressionTest, UnknownNameAndCodeNameTheValue) {
  Status s = parse_compression("fp8").status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'fp8'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("none, fp16"), std::string::npos) << s.message();
  EXPECT_EQ(parse_compression("").status().code(), StatusCode::kInvalidArgument);
  s = compression_from_int(kNumCompressions).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(std::to_string(kNumCompressions)), std::string::npos);
  EXPECT_EQ(compression_from_int(-1).status().code(), StatusCode::kInvalidArgument);
}

TEST(CompressionTest, WireTypeIsTheHalfTypeOrTheDtypeItself) {
  EXPECT_EQ(wire_data_type(DataType::kFloat32, Compression::kNone), DataType::kFloat32);
  EXPECT_EQ(wire_data_type(DataType::kInt64, Compression::kNone), DataType::kInt64);
  EXPECT_EQ(wire_data_type(DataType::kFloat32, Compression::kFloat16), DataType::kFloat16);
  EXPECT_EQ(wire_data_type(DataType::kFloat32, Compression::kBFloat16), DataType::kBFloat16);
}

}  // namespace
}  // namespace hora
