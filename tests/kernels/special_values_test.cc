// Hand-picked values, per ISA: NaN propagation, integer wrap-around, float16 subnormals and
// infinities, bfloat16 ties. Each value is placed at every position of a 70-element buffer
// (register bodies, unrolled blocks and the scalar tail) with ordinary values around it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/kernels.h"
#include "tests/kernels/isa_param.h"

namespace hora {
namespace kernels_test {
namespace {

using kernels::Isa;

constexpr size_t kCount = 70;
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                             ReduceOp::kProduct};

// For each position p: dst = {1...}, src = {2...}, with dst[p] = x and src[p] = y; checks
// that reduce(op) gives `want(result at p)` and leaves the other positions at 1 op 2.
template <typename T, typename Check>
void at_every_position(DataType dtype, ReduceOp op, T x, T y, T ordinary_a, T ordinary_b,
                       T ordinary_result, Check check) {
  for (size_t p = 0; p < kCount; ++p) {
    std::vector<T> dst(kCount, ordinary_a), src(kCount, ordinary_b);
    dst[p] = x;
    src[p] = y;
    kernels::reduce(dst.data(), src.data(), kCount, dtype, op);
    for (size_t i = 0; i < kCount; ++i) {
      if (i == p) {
        ASSERT_TRUE(check(dst[i])) << reduce_op_name(op) << " at position " << p;
      } else {
        ASSERT_EQ(dst[i], ordinary_result) << reduce_op_name(op) << " position " << i;
      }
    }
  }
}

TEST_P(IsaTest, NaNPropagatesFloat32AndFloat64) {
  const float nan32 = std::numeric_limits<float>::quiet_NaN();
  const double nan64 = std::numeric_limits<double>::quiet_NaN();
  for (ReduceOp op : kOps) {
    const float r32 = op == ReduceOp::kProduct ? 2.f
                      : op == ReduceOp::kMin   ? 1.f
                      : op == ReduceOp::kMax   ? 2.f
                                               : 3.f;
    auto is_nan32 = [](float v) { return std::isnan(v); };
    auto is_nan64 = [](double v) { return std::isnan(v); };
    at_every_position<float>(DataType::kFloat32, op, nan32, 5.f, 1.f, 2.f, r32, is_nan32);
    at_every_position<float>(DataType::kFloat32, op, 5.f, nan32, 1.f, 2.f, r32, is_nan32);
    at_every_position<float>(DataType::kFloat32, op, -nan32, -INFINITY, 1.f, 2.f, r32, is_nan32);
    at_every_position<double>(DataType::kFloat64, op, nan64, -7.0, 1.0, 2.0, r32, is_nan64);
    at_every_position<double>(DataType::kFloat64, op, -7.0, nan64, 1.0, 2.0, r32, is_nan64);
  }
}

TEST_P(IsaTest, NaNPropagatesFloat16AndBFloat16) {
  // float16: 1 = 0x3c00, 2 = 0x4000, NaN 0x7e00; bfloat16: 1 = 0x3f80, 2 = 0x4000, NaN 0x7fc0.
  for (ReduceOp op : kOps) {
    const float r = op == ReduceOp::kProduct ? 2.f
                    : op == ReduceOp::kMin   ? 1.f
                    : op == ReduceOp::kMax   ? 2.f
                                             : 3.f;
    auto f16_nan = [](uint16_t v) { return (v & 0x7fff) > 0x7c00; };
    auto bf16_nan = [](uint16_t v) { return (v & 0x7fff) > 0x7f80; };
    at_every_position<uint16_t>(DataType::kFloat16, op, 0x7e00, 0x4500, 0x3c00, 0x4000,
                                kernels::f32_to_f16(r), f16_nan);
    at_every_position<uint16_t>(DataType::kFloat16, op, 0x4500, 0xfc01, 0x3c00, 0x4000,
                                kernels::f32_to_f16(r), f16_nan);
    at_every_position<uint16_t>(DataType::kBFloat16, op, 0x7fc0, 0x4100, 0x3f80, 0x4000,
                                kernels::f32_to_bf16(r), bf16_nan);
    at_every_position<uint16_t>(DataType::kBFloat16, op, 0x4100, 0xff81, 0x3f80, 0x4000,
                                kernels::f32_to_bf16(r), bf16_nan);
  }
}

TEST_P(IsaTest, InfinityMinusInfinityIsNaN) {
  auto is_nan = [](float v) { return std::isnan(v); };
  at_every_position<float>(DataType::kFloat32, ReduceOp::kSum, INFINITY, -INFINITY, 1.f, 2.f, 3.f,
                           is_nan);
  at_every_position<float>(DataType::kFloat32, ReduceOp::kProduct, INFINITY, 0.f, 1.f, 2.f, 2.f,
                           is_nan);
}

template <typename T>
void expect_wraps(DataType dtype, ReduceOp op, T x, T y, T want, T a, T b, T ab) {
  at_every_position<T>(dtype, op, x, y, a, b, ab, [want](T v) { return v == want; });
}

TEST_P(IsaTest, IntegersWrap) {
  const auto sum = ReduceOp::kSum;
  const auto prod = ReduceOp::kProduct;
  expect_wraps<uint8_t>(DataType::kUint8, sum, 200, 100, 44, 1, 2, 3);
  expect_wraps<uint8_t>(DataType::kUint8, prod, 16, 17, 16, 1, 2, 2);  // 272 mod 256
  expect_wraps<int8_t>(DataType::kInt8, sum, 127, 1, -128, 1, 2, 3);
  expect_wraps<int8_t>(DataType::kInt8, prod, -128, -1, -128, 1, 2, 2);
  expect_wraps<int8_t>(DataType::kInt8, prod, 100, 3, 44, 1, 2, 2);  // 300 - 256
  const int32_t i32_max = std::numeric_limits<int32_t>::max();
  expect_wraps<int32_t>(DataType::kInt32, sum, i32_max, 1, std::numeric_limits<int32_t>::min(), 1,
                        2, 3);
  expect_wraps<int32_t>(DataType::kInt32, prod, 65536, 65536, 0, 1, 2, 2);
  expect_wraps<int32_t>(DataType::kInt32, prod, 65537, 65537, 131073, 1, 2, 2);  // 2^32+2^17+1
  const int64_t i64_min = std::numeric_limits<int64_t>::min();
  expect_wraps<int64_t>(DataType::kInt64, sum, i64_min, -1, std::numeric_limits<int64_t>::max(), 1,
                        2, 3);
  expect_wraps<int64_t>(DataType::kInt64, prod, int64_t{1} << 32, int64_t{1} << 32, 0, 1, 2, 2);
  // (2^32 + 3) * (2^32 + 5) = 2^64 + 8 * 2^32 + 15: keeps 8 * 2^32 + 15.
  expect_wraps<int64_t>(DataType::kInt64, prod, (int64_t{1} << 32) + 3, (int64_t{1} << 32) + 5,
                        (int64_t{8} << 32) + 15, 1, 2, 2);
  expect_wraps<int64_t>(DataType::kInt64, prod, -3, int64_t{1} << 62, int64_t{1} << 62, 1, 2, 2);
  expect_wraps<int16_t>(DataType::kInt16, sum, 32767, 1, -32768, 1, 2, 3);
  expect_wraps<int16_t>(DataType::kInt16, prod, 300, 300, 24464, 1, 2, 2);  // 90000 - 65536
  expect_wraps<int16_t>(DataType::kInt16, prod, -32768, -1, -32768, 1, 2, 2);
  expect_wraps<uint16_t>(DataType::kUint16, sum, 65535, 2, 1, 1, 2, 3);
  expect_wraps<uint16_t>(DataType::kUint16, prod, 256, 257, 256, 1, 2, 2);  // 65792 mod 65536
}

TEST_P(IsaTest, SignedMinMax) {
  expect_wraps<int8_t>(DataType::kInt8, ReduceOp::kMin, -128, 127, -128, 1, 2, 1);
  expect_wraps<uint8_t>(DataType::kUint8, ReduceOp::kMax, 255, 1, 255, 1, 2, 2);
  expect_wraps<int32_t>(DataType::kInt32, ReduceOp::kMax, -5, -7, -5, 1, 2, 2);
  expect_wraps<int64_t>(DataType::kInt64, ReduceOp::kMin, -(int64_t{1} << 40), int64_t{1} << 40,
                        -(int64_t{1} << 40), 1, 2, 1);
  expect_wraps<int64_t>(DataType::kInt64, ReduceOp::kMax, int64_t{-1}, int64_t{-2}, int64_t{-1}, 1,
                        2, 2);
  expect_wraps<int16_t>(DataType::kInt16, ReduceOp::kMin, -32768, 32767, -32768, 1, 2, 1);
  expect_wraps<int16_t>(DataType::kInt16, ReduceOp::kMax, -5, -7, -5, 1, 2, 2);
  // uint16 compares unsigned: 0x8000 is larger than 1, not negative.
  expect_wraps<uint16_t>(DataType::kUint16, ReduceOp::kMax, 0x8000, 1, 0x8000, 1, 2, 2);
  expect_wraps<uint16_t>(DataType::kUint16, ReduceOp::kMin, 0xffff, 0x7fff, 0x7fff, 1, 2, 1);
}

// bool: any non-zero byte is true and results are 0 or 1. 2 and 0x80 share no bit, so a
// bitwise and would give false; the logical and gives true.
TEST_P(IsaTest, BoolIsLogical) {
  const auto min = ReduceOp::kMin, max = ReduceOp::kMax, prod = ReduceOp::kProduct;
  for (ReduceOp and_op : {min, prod}) {
    expect_wraps<uint8_t>(DataType::kBool, and_op, 2, 0x80, 1, 1, 1, 1);
    expect_wraps<uint8_t>(DataType::kBool, and_op, 0xff, 0, 0, 1, 1, 1);
    expect_wraps<uint8_t>(DataType::kBool, and_op, 0, 0, 0, 0, 1, 0);
  }
  expect_wraps<uint8_t>(DataType::kBool, max, 2, 0, 1, 0, 0, 0);
  expect_wraps<uint8_t>(DataType::kBool, max, 0, 0x40, 1, 1, 0, 1);
  expect_wraps<uint8_t>(DataType::kBool, max, 0, 0, 0, 1, 0, 1);
  expect_wraps<uint8_t>(DataType::kBool, max, 0x80, 0x80, 1, 0, 0, 0);
}

TEST_P(IsaTest, Float16SubnormalsAndInfinities) {
  const auto sum = ReduceOp::kSum;
  // Smallest subnormal 2^-24 (0x0001): 1 + 1 = 2 (0x0002), kept, not flushed.
  expect_wraps<uint16_t>(DataType::kFloat16, sum, 0x0001, 0x0001, 0x0002, 0x3c00, 0x4000, 0x4200);
  // Largest subnormal + smallest subnormal = smallest normal 2^-14 (0x0400).
  expect_wraps<uint16_t>(DataType::kFloat16, sum, 0x03ff, 0x0001, 0x0400, 0x3c00, 0x4000, 0x4200);
  // 65504 + 65504 overflows to +inf; -inf + 1 stays -inf.
  expect_wraps<uint16_t>(DataType::kFloat16, sum, 0x7bff, 0x7bff, 0x7c00, 0x3c00, 0x4000, 0x4200);
  expect_wraps<uint16_t>(DataType::kFloat16, sum, 0xfc00, 0x3c00, 0xfc00, 0x3c00, 0x4000, 0x4200);
  // 2^-14 * 2^-11 = 2^-25 is exactly half the smallest subnormal: ties to even (zero).
  expect_wraps<uint16_t>(DataType::kFloat16, ReduceOp::kProduct, 0x0400, 0x1000, 0x0000, 0x3c00,
                         0x4000, 0x4000);
  // 1.5 * 2^-14 * 2^-10 = 1.5 * 2^-24: a tie between 0x0001 and 0x0002, to the even 0x0002.
  expect_wraps<uint16_t>(DataType::kFloat16, ReduceOp::kProduct, 0x0600, 0x1400, 0x0002, 0x3c00,
                         0x4000, 0x4000);
  expect_wraps<uint16_t>(DataType::kFloat16, ReduceOp::kMin, 0x8001, 0x0001, 0x8001, 0x3c00, 0x4000,
                         0x3c00);
}

TEST_P(IsaTest, BFloat16RoundsTiesToEven) {
  const auto sum = ReduceOp::kSum;
  // 1 + 2^-8 = 0x3f808000 in float32: a tie between 0x3f80 and 0x3f81; to even 0x3f80.
  expect_wraps<uint16_t>(DataType::kBFloat16, sum, 0x3f80, 0x3b80, 0x3f80, 0x3f80, 0x4000, 0x4040);
  // (1 + 2^-7) + 2^-8 = 0x3f818000: a tie between 0x3f81 and 0x3f82; to even 0x3f82.
  expect_wraps<uint16_t>(DataType::kBFloat16, sum, 0x3f81, 0x3b80, 0x3f82, 0x3f80, 0x4000, 0x4040);
  // Just above the tie rounds up: 1 + 2^-8 + 2^-9 = 0x3f80c000 -> 0x3f81.
  expect_wraps<uint16_t>(DataType::kBFloat16, sum, 0x3f80, 0x3bc0, 0x3f81, 0x3f80, 0x4000, 0x4040);
  // Largest finite + itself overflows to infinity.
  expect_wraps<uint16_t>(DataType::kBFloat16, sum, 0x7f7f, 0x7f7f, 0x7f80, 0x3f80, 0x4000, 0x4040);
}

INSTANTIATE_TEST_SUITE_P(AllPaths, IsaTest, ::testing::ValuesIn(kAllIsas), isa_param_name);

}  // namespace
}  // namespace kernels_test
}  // namespace hora
