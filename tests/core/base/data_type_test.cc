#include "hora/data_type.h"

#include <gtest/gtest.h>

#include "hora/device.h"
#include "hora/reduce_op.h"

namespace hora {
namespace {

TEST(DataTypeTest, SizesAndNamesRoundTrip) {
  const size_t sizes[kNumDataTypes] = {1, 1, 4, 8, 2, 2, 4, 8, 2, 2, 1};
  for (int i = 0; i < kNumDataTypes; ++i) {
    DataType t = static_cast<DataType>(i);
    EXPECT_EQ(data_type_bytes(t), sizes[i]) << data_type_name(t);
    auto parsed = parse_data_type(data_type_name(t));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(parsed.value(), t);
  }
  EXPECT_EQ(parse_data_type("bf16").value(), DataType::kBFloat16);
  EXPECT_EQ(parse_data_type("fp16").value(), DataType::kFloat16);
  EXPECT_TRUE(is_floating(DataType::kBFloat16));
  EXPECT_FALSE(is_floating(DataType::kInt64));
  EXPECT_FALSE(is_floating(DataType::kInt16));
  EXPECT_FALSE(is_floating(DataType::kUint16));
  EXPECT_FALSE(is_floating(DataType::kBool));
}

// The three types added after float64 keep the first eight's wire values and have their names
// and aliases.
TEST(DataTypeTest, Int16Uint16BoolAppendedAfterFloat64) {
  EXPECT_EQ(static_cast<int>(DataType::kUint8), 0);
  EXPECT_EQ(static_cast<int>(DataType::kFloat64), 7);
  EXPECT_EQ(static_cast<int>(DataType::kInt16), 8);
  EXPECT_EQ(static_cast<int>(DataType::kUint16), 9);
  EXPECT_EQ(static_cast<int>(DataType::kBool), 10);
  EXPECT_EQ(kNumDataTypes, 11);
  EXPECT_STREQ(data_type_name(DataType::kInt16), "int16");
  EXPECT_STREQ(data_type_name(DataType::kUint16), "uint16");
  EXPECT_STREQ(data_type_name(DataType::kBool), "bool");
  EXPECT_EQ(parse_data_type("i16").value(), DataType::kInt16);
  EXPECT_EQ(parse_data_type("short").value(), DataType::kInt16);
  EXPECT_EQ(parse_data_type("u16").value(), DataType::kUint16);
  EXPECT_EQ(parse_data_type("ushort").value(), DataType::kUint16);
  EXPECT_EQ(parse_data_type("boolean").value(), DataType::kBool);
  EXPECT_EQ(parse_data_type("bool_").value(), DataType::kBool);
}

TEST(DataTypeTest, UnknownNameIsClearError) {
  auto r = parse_data_type("complex64");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("complex64"), std::string::npos);
  EXPECT_NE(r.status().message().find("bfloat16"), std::string::npos);
  EXPECT_NE(r.status().message().find("uint16"), std::string::npos);
  EXPECT_NE(r.status().message().find("bool"), std::string::npos);
}

TEST(DataTypeTest, FromIntValidates) {
  for (int i = 0; i < kNumDataTypes; ++i) {
    auto t = data_type_from_int(i);
    ASSERT_TRUE(t.ok()) << i;
    EXPECT_EQ(static_cast<int>(t.value()), i);
  }
  EXPECT_EQ(data_type_from_int(10).value(), DataType::kBool);
  EXPECT_FALSE(data_type_from_int(-1).ok());
  auto eleven = data_type_from_int(11);
  ASSERT_FALSE(eleven.ok());
  EXPECT_EQ(eleven.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(eleven.status().message().find("0..10"), std::string::npos);
  EXPECT_FALSE(data_type_from_int(255).ok());
}

TEST(ReduceOpTest, ParseAndName) {
  for (int i = 0; i < kNumReduceOps; ++i) {
    ReduceOp op = static_cast<ReduceOp>(i);
    EXPECT_EQ(parse_reduce_op(reduce_op_name(op)).value(), op);
  }
  EXPECT_EQ(parse_reduce_op("adasum").value(), ReduceOp::kAdasum);
  EXPECT_EQ(reduce_op_from_int(5).value(), ReduceOp::kAdasum);
  EXPECT_FALSE(reduce_op_from_int(kNumReduceOps).ok());
  EXPECT_EQ(parse_reduce_op("avg").value(), ReduceOp::kAverage);
  EXPECT_EQ(parse_reduce_op("prod").value(), ReduceOp::kProduct);
  auto bad = parse_reduce_op("xor");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'xor'"), std::string::npos);
  EXPECT_FALSE(reduce_op_from_int(9).ok());
}

// Every op on every numeric dtype; on bool only min, max, product. The refusal names the
// caller's collective, the op and the alternatives.
TEST(ReduceOpTest, BoolSumAndAverageAreNotDefined) {
  for (int d = 0; d < kNumDataTypes; ++d) {
    const DataType dtype = static_cast<DataType>(d);
    for (int o = 0; o < kNumElementwiseReduceOps; ++o) {
      const ReduceOp op = static_cast<ReduceOp>(o);
      const bool want = dtype != DataType::kBool || op == ReduceOp::kMin || op == ReduceOp::kMax ||
                        op == ReduceOp::kProduct;
      EXPECT_EQ(is_reduce_op_defined(op, dtype), want)
          << data_type_name(dtype) << " " << reduce_op_name(op);
      EXPECT_EQ(check_reduce_op(op, dtype, "allreduce").ok(), want);
    }
  }
  Status s = check_reduce_op(ReduceOp::kSum, DataType::kBool, "tensor 'x': allreduce");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "tensor 'x': allreduce op sum is not defined for bool; use min (logical and) or max "
            "(logical or)");
  EXPECT_NE(check_reduce_op(ReduceOp::kAverage, DataType::kBool, "reducescatter")
                .message()
                .find("reducescatter op average is not defined for bool"),
            std::string::npos);
}

TEST(ReduceOpTest, BoolScalesOnlyByOne) {
  EXPECT_TRUE(is_scale_defined(DataType::kBool, 1.0));
  EXPECT_FALSE(is_scale_defined(DataType::kBool, 0.5));
  EXPECT_TRUE(is_scale_defined(DataType::kInt16, 0.5));
  EXPECT_TRUE(is_scale_defined(DataType::kUint16, 3.0));
}

TEST(DeviceTest, ParseAndPrint) {
  EXPECT_EQ(parse_device("cpu").value(), Device::cpu());
  EXPECT_EQ(parse_device("cuda").value(), Device::cuda(0));
  EXPECT_EQ(parse_device("cuda:3").value(), Device::cuda(3));
  EXPECT_EQ(Device::cuda(2).to_string(), "cuda:2");
  EXPECT_EQ(Device::cpu().to_string(), "cpu");
  for (const char* bad : {"gpu", "cuda:", "cuda:-1", "cuda:x", "CPU"}) {
    auto r = parse_device(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
}

// Adasum: defined for the four float dtypes, refused elsewhere and by every elementwise
// implementation (check_reduce_op) with messages that say why.
TEST(ReduceOpTest, AdasumTakesFloatsAndIsNotElementwise) {
  for (int d = 0; d < kNumDataTypes; ++d) {
    const DataType dtype = static_cast<DataType>(d);
    const bool is_float = dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 ||
                          dtype == DataType::kFloat32 || dtype == DataType::kFloat64;
    EXPECT_EQ(is_reduce_op_defined(ReduceOp::kAdasum, dtype), is_float) << data_type_name(dtype);
    const Status s = check_reduce_op(ReduceOp::kAdasum, dtype, "ring allreduce");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(is_float ? "not an elementwise reduction"
                                        : "takes float16, bfloat16, float32 or float64"),
              std::string::npos)
        << s.message();
  }
  EXPECT_FALSE(is_elementwise_reduce_op(ReduceOp::kAdasum));
  EXPECT_TRUE(is_elementwise_reduce_op(ReduceOp::kProduct));
}

}  // namespace
}  // namespace hora
