// scale / scale_copy on every ISA: the integer rule (float64 product, llround, wrap), floats
// in their own precision, every dtype against the reference, factor 1.0 as an exact copy,
// misaligned and aliased buffers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/kernels.h"
#include "tests/kernels/isa_param.h"
#include "tests/kernels/kernel_reference.h"

namespace hora {
namespace kernels_test {
namespace {

// Every dtype scale is defined on (all but bool).
constexpr DataType kScalableDtypes[] = {DataType::kUint8,   DataType::kInt8,     DataType::kInt16,
                                        DataType::kUint16,  DataType::kInt32,    DataType::kInt64,
                                        DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                        DataType::kFloat64};

class ScaleTest : public IsaTest {};

template <typename T>
std::vector<T> scaled(std::vector<T> values, DataType dtype, double factor) {
  kernels::scale(values.data(), values.size(), dtype, factor);
  return values;
}

TEST_P(ScaleTest, IntegersRoundHalfAwayFromZeroAndWrap) {
  using V32 = std::vector<int32_t>;
  EXPECT_EQ(scaled(V32{5, -5, 3, -3, 7, 1, 0}, DataType::kInt32, 0.5),
            (V32{3, -3, 2, -2, 4, 1, 0}));
  EXPECT_EQ(scaled(V32{10, -10, 1}, DataType::kInt32, 0.25), (V32{3, -3, 0}));   // 2.5, -2.5, 0.25
  EXPECT_EQ(scaled(V32{2000000000}, DataType::kInt32, 2.0), (V32{-294967296}));  // 4e9 wraps.
  using VU8 = std::vector<uint8_t>;
  EXPECT_EQ(scaled(VU8{200, 3, 255}, DataType::kUint8, 2.0), (VU8{144, 6, 254}));
  EXPECT_EQ(scaled(VU8{5}, DataType::kUint8, -1.0), (VU8{251}));  // -5 wraps to 251.
  using VI8 = std::vector<int8_t>;
  EXPECT_EQ(scaled(VI8{100, -100, 3}, DataType::kInt8, 2.0), (VI8{-56, 56, 6}));
  EXPECT_EQ(scaled(VI8{-100, 1}, DataType::kInt8, 1.5), (VI8{106, 2}));  // -150 wraps; 1.5 -> 2.
  using V64 = std::vector<int64_t>;
  EXPECT_EQ(scaled(V64{int64_t{1} << 60, 3, -9}, DataType::kInt64, 0.5),
            (V64{int64_t{1} << 59, 2, -5}));
  EXPECT_EQ(scaled(V64{3}, DataType::kInt64, 1.0 / 3.0), (V64{1}));
  // Through float64: 2^53 + 1 is not a double, so it scales as 2^53.
  EXPECT_EQ(scaled(V64{(int64_t{1} << 53) + 1}, DataType::kInt64, 2.0), (V64{int64_t{1} << 54}));
  // Beyond int64's range the product saturates (llround has no value there; the GPU's and
  // x86's differ): the CPU and CUDA kernels agree on the limits.
  const int64_t max64 = std::numeric_limits<int64_t>::max();
  const int64_t min64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(
      scaled(V64{max64, min64, int64_t{1} << 62, -(int64_t{1} << 62)}, DataType::kInt64, -3.0),
      (V64{min64, max64, min64, max64}));
  EXPECT_EQ(scaled(V64{max64, min64}, DataType::kInt64, 1.0), (V64{max64, min64}));
  using VI16 = std::vector<int16_t>;
  EXPECT_EQ(scaled(VI16{5, -5, 30000, -3}, DataType::kInt16, 0.5), (VI16{3, -3, 15000, -2}));
  EXPECT_EQ(scaled(VI16{30000, -20000}, DataType::kInt16, 2.0), (VI16{-5536, 25536}));  // Wraps.
  using VU16 = std::vector<uint16_t>;
  EXPECT_EQ(scaled(VU16{65535, 7, 40000}, DataType::kUint16, 0.5), (VU16{32768, 4, 20000}));
  EXPECT_EQ(scaled(VU16{40000, 5}, DataType::kUint16, 2.0), (VU16{14464, 10}));  // 80000 wraps.
  EXPECT_EQ(scaled(VU16{5}, DataType::kUint16, -1.0), (VU16{65531}));
}

TEST_P(ScaleTest, FloatsInTheirOwnPrecision) {
  // float32 multiplies by float(factor): 3 * float(0.1) rounded in float32.
  EXPECT_EQ(scaled(std::vector<float>{3.f}, DataType::kFloat32, 0.1)[0], 3.f * 0.1f);
  EXPECT_EQ(scaled(std::vector<double>{3.0}, DataType::kFloat64, 0.1)[0], 3.0 * 0.1);
  const std::vector<float> nan = scaled(std::vector<float>{NAN, INFINITY}, DataType::kFloat32, 0.0);
  EXPECT_TRUE(std::isnan(nan[0]));
  EXPECT_TRUE(std::isnan(nan[1]));  // inf * 0
  // float16 1.0 * 2^-24 = the smallest subnormal; 2 * 65504 = inf.
  EXPECT_EQ(scaled(std::vector<uint16_t>{0x3c00}, DataType::kFloat16, 0x1p-24),
            (std::vector<uint16_t>{0x0001}));
  EXPECT_EQ(scaled(std::vector<uint16_t>{0x7bff}, DataType::kFloat16, 2.0),
            (std::vector<uint16_t>{0x7c00}));
  // bfloat16 1.0 * (1 + 2^-8) is a tie: to even 0x3f80; * (1 + 2^-8 + 2^-20) rounds up.
  EXPECT_EQ(scaled(std::vector<uint16_t>{0x3f80, 0x3f80}, DataType::kBFloat16, 1.0 + 0x1p-8),
            (std::vector<uint16_t>{0x3f80, 0x3f80}));
  EXPECT_EQ(scaled(std::vector<uint16_t>{0x3f80}, DataType::kBFloat16, 1.0 + 0x1p-8 + 0x1p-20),
            (std::vector<uint16_t>{0x3f81}));
}

// Every dtype, lengths across the register widths, misaligned source and destination.
TEST_P(ScaleTest, MatchesReference) {
  for (DataType dtype : kScalableDtypes) {
    const size_t elem = data_type_bytes(dtype);
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{9}, size_t{65}, size_t{100003}}) {
      for (double factor : {0.5, -3.0, 1.0 / 7.0, 1e-3}) {
        Buffer src(count * elem, 1), dst(count * elem, 3);
        fill_random(dtype, src.data(), count, count + 5);
        std::vector<uint8_t> original(src.data(), src.data() + count * elem);
        kernels::scale_copy(dst.data(), src.data(), count, dtype, factor);
        kernels::scale(src.data(), count, dtype, factor);  // In place.
        std::vector<uint8_t> want(elem);
        for (size_t i = 0; i < count; ++i) {
          ref_scale(dtype, factor, original.data() + i * elem, want.data());
          ASSERT_TRUE(same_element(dtype, want.data(), dst.data() + i * elem))
              << data_type_name(dtype) << " count " << count << " factor " << factor << " element "
              << i << ": " << element_string(dtype, original.data() + i * elem) << " gave "
              << element_string(dtype, dst.data() + i * elem) << ", expected "
              << element_string(dtype, want.data());
          ASSERT_TRUE(same_element(dtype, want.data(), src.data() + i * elem))
              << "in place, " << data_type_name(dtype) << " element " << i;
        }
      }
    }
  }
}

// factor 1.0: scale changes nothing and scale_copy is a byte copy (NaN payloads included).
// bool included: a factor of 1 is the one scale defined on it.
TEST_P(ScaleTest, FactorOneIsExactCopy) {
  for (int d = 0; d < kNumDataTypes; ++d) {
    const DataType dtype = static_cast<DataType>(d);
    const size_t count = 1000, bytes = count * data_type_bytes(dtype);
    Buffer src(bytes, 1), dst(bytes, 0);
    fill_random(dtype, src.data(), count, 99);
    std::vector<uint8_t> original(src.data(), src.data() + bytes);
    kernels::scale(src.data(), count, dtype, 1.0);
    EXPECT_EQ(std::memcmp(src.data(), original.data(), bytes), 0) << data_type_name(dtype);
    kernels::scale_copy(dst.data(), src.data(), count, dtype, 1.0);
    EXPECT_EQ(std::memcmp(dst.data(), original.data(), bytes), 0) << data_type_name(dtype);
    kernels::scale_copy(src.data(), src.data(), count, dtype, 1.0);  // Aliased: no-op.
    EXPECT_EQ(std::memcmp(src.data(), original.data(), bytes), 0) << data_type_name(dtype);
  }
}

TEST_P(ScaleTest, ScaleCopyAliasedAndLeavesSourceAlone) {
  std::vector<float> src(77), dst(77, -1.f);
  for (size_t i = 0; i < src.size(); ++i) src[i] = float(i);
  kernels::scale_copy(dst.data(), src.data(), src.size(), DataType::kFloat32, 2.0);
  for (size_t i = 0; i < src.size(); ++i) {
    ASSERT_EQ(src[i], float(i));
    ASSERT_EQ(dst[i], 2.f * float(i));
  }
  kernels::scale_copy(dst.data(), dst.data(), dst.size(), DataType::kFloat32, 0.25);
  for (size_t i = 0; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0.5f * float(i));
}

// Scaling bool by anything but 1 is a caller's bug (refused before the kernels with
// is_scale_defined): the kernels abort naming the dtype.
TEST(ScaleDeathTest, BoolScaleAborts) {
  uint8_t flags[3] = {0, 1, 1};
  EXPECT_DEATH(kernels::scale(flags, 3, DataType::kBool, 0.5), "not defined for bool");
  uint8_t out[3];
  EXPECT_DEATH(kernels::scale_copy(out, flags, 3, DataType::kBool, 2.0), "not defined for bool");
}

INSTANTIATE_TEST_SUITE_P(AllPaths, ScaleTest, ::testing::ValuesIn(kAllIsas), isa_param_name);

}  // namespace
}  // namespace kernels_test
}  // namespace hora
