#include "core/base/data_type.h"

#include <gtest/gtest.h>

#include "core/base/device.h"
#include "core/base/reduce_op.h"

namespace hora {
namespace {

TEST(DataTypeTest, SizesAndNamesRoundTrip) {
  const size_t sizes[kNumDataTypes] = {1, 1, 4, 8, 2, 2, 4, 8};
  for (int i = 0; i < kNumDataTypes; ++i) {
    DataType t = static_cast<DataType>(i);
    EXPECT_EQ(data_type_bytes(t), sizes[i]) << data_type_name(t);
    auto parsed = parse_data_type(data_type_name(t));
    ASSERT_TRUE(parsed.is_ok());
    EXPECT_EQ(parsed.value(), t);
  }
  EXPECT_EQ(parse_data_type("bf16").value(), DataType::kBFloat16);
  EXPECT_EQ(parse_data_type("fp16").value(), DataType::kFloat16);
  EXPECT_TRUE(is_floating(DataType::kBFloat16));
  EXPECT_FALSE(is_floating(DataType::kInt64));
}

TEST(DataTypeTest, UnknownNameIsClearError) {
  auto r = parse_data_type("complex64");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("complex64"), std::string::npos);
  EXPECT_NE(r.status().message().find("bfloat16"), std::string::npos);
}

TEST(DataTypeTest, FromIntValidates) {
  EXPECT_TRUE(data_type_from_int(0).is_ok());
  EXPECT_FALSE(data_type_from_int(-1).is_ok());
  EXPECT_FALSE(data_type_from_int(kNumDataTypes).is_ok());
}

TEST(ReduceOpTest, ParseAndName) {
  for (int i = 0; i < kNumReduceOps; ++i) {
    ReduceOp op = static_cast<ReduceOp>(i);
    EXPECT_EQ(parse_reduce_op(reduce_op_name(op)).value(), op);
  }
  EXPECT_EQ(parse_reduce_op("avg").value(), ReduceOp::kAverage);
  EXPECT_EQ(parse_reduce_op("prod").value(), ReduceOp::kProduct);
  auto bad = parse_reduce_op("xor");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("'xor'"), std::string::npos);
  EXPECT_FALSE(reduce_op_from_int(9).is_ok());
}

TEST(DeviceTest, ParseAndPrint) {
  EXPECT_EQ(parse_device("cpu").value(), Device::cpu());
  EXPECT_EQ(parse_device("cuda").value(), Device::cuda(0));
  EXPECT_EQ(parse_device("cuda:3").value(), Device::cuda(3));
  EXPECT_EQ(Device::cuda(2).to_string(), "cuda:2");
  EXPECT_EQ(Device::cpu().to_string(), "cpu");
  for (const char* bad : {"gpu", "cuda:", "cuda:-1", "cuda:x", "CPU"}) {
    auto r = parse_device(bad);
    EXPECT_FALSE(r.is_ok()) << bad;
  }
}

}  // namespace
}  // namespace hora
