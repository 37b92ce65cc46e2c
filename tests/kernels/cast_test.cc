// Casts float32 <-> float16 / bfloat16, scalar and array forms, on every ISA, against the
// independent reference: every 16-bit pattern decoded; a dense sample of float32 patterns,
// plus every exact tie (the midpoint of two neighbouring 16-bit values) and its neighbours,
// encoded; round trips.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "tests/kernels/isa_param.h"
#include "tests/kernels/kernel_reference.h"

namespace hora {
namespace kernels_test {
namespace {

uint32_t bits_of(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}
float float_of(uint32_t b) {
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}

// Same float value: equal bits, or both NaN.
bool same_float(float want, float got) {
  return std::isnan(want) ? std::isnan(got) : bits_of(want) == bits_of(got);
}

struct Format {
  HalfFormat ref;
  uint16_t (*to_half)(float);
  float (*to_float)(uint16_t);
  void (*cast_to_half)(uint16_t*, const float*, size_t);
  void (*cast_to_float)(float*, const uint16_t*, size_t);
  const char* name;
};
const Format kF16{kF16Format,
                  kernels::f32_to_f16,
                  kernels::f16_to_f32,
                  kernels::cast_f32_to_f16,
                  kernels::cast_f16_to_f32,
                  "float16"};
const Format kBF16{kBF16Format,
                   kernels::f32_to_bf16,
                   kernels::bf16_to_f32,
                   kernels::cast_f32_to_bf16,
                   kernels::cast_bf16_to_f32,
                   "bfloat16"};

// float32 inputs that exercise rounding: a dense stride through all 2^32 patterns, every
// midpoint between neighbouring non-negative 16-bit values (exact ties) and the float32
// values on either side of it, all with both signs.
std::vector<float> encode_samples(const Format& format) {
  std::vector<float> samples;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4093) samples.push_back(float_of(uint32_t(b)));
  for (uint32_t h = 0; h < 0x7fff; ++h) {
    const float lo = ref_half_to_float(format.ref, uint16_t(h));
    const float hi = ref_half_to_float(format.ref, uint16_t(h + 1));
    if (std::isnan(lo) || std::isnan(hi) || std::isinf(lo)) continue;
    const double mid = (double(lo) + double(hi)) / 2;
    const float tie = float(mid);
    if (double(tie) != mid) continue;  // Not representable in float32 (never for these formats).
    for (float v : {tie, std::nextafter(tie, 0.f), std::nextafter(tie, INFINITY)}) {
      samples.push_back(v);
      samples.push_back(-v);
    }
  }
  return samples;
}

class CastTest : public IsaTest {
 protected:
  void check_decode_all(const Format& format) {
    std::vector<uint16_t> all(65536);
    for (uint32_t h = 0; h < 65536; ++h) all[h] = uint16_t(h);
    // Misaligned by one element of the output (and, for the input, one byte).
    Buffer in(all.size() * 2, 1);
    std::memcpy(in.data(), all.data(), all.size() * 2);
    std::vector<float> out(all.size() + 1);
    format.cast_to_float(out.data() + 1, reinterpret_cast<const uint16_t*>(in.data()), all.size());
    for (uint32_t h = 0; h < 65536; ++h) {
      const float want = ref_half_to_float(format.ref, uint16_t(h));
      ASSERT_TRUE(same_float(want, format.to_float(uint16_t(h))))
          << format.name << " scalar decode of 0x" << std::hex << h << " gave "
          << format.to_float(uint16_t(h));
      ASSERT_TRUE(same_float(want, out[h + 1]))
          << format.name << " array decode of 0x" << std::hex << h << " gave " << out[h + 1];
    }
  }

  void check_encode_sample(const Format& format) {
    const std::vector<float> samples = encode_samples(format);
    ASSERT_GT(samples.size(), 1000000u);
    std::vector<uint16_t> out(samples.size() + 1);
    format.cast_to_half(out.data() + 1, samples.data(), samples.size());
    for (size_t i = 0; i < samples.size(); ++i) {
      const uint16_t want = ref_float_to_half(format.ref, samples[i]);
      const uint16_t scalar = format.to_half(samples[i]);
      const bool want_nan = ref_half_is_nan(format.ref, want);
      ASSERT_TRUE(want_nan ? ref_half_is_nan(format.ref, scalar) : scalar == want)
          << format.name << " scalar encode of " << samples[i] << " (0x" << std::hex
          << bits_of(samples[i]) << ") gave 0x" << scalar << ", expected 0x" << want;
      ASSERT_TRUE(want_nan ? ref_half_is_nan(format.ref, out[i + 1]) : out[i + 1] == want)
          << format.name << " array encode of " << samples[i] << " (0x" << std::hex
          << bits_of(samples[i]) << ") gave 0x" << out[i + 1] << ", expected 0x" << want;
    }
  }

  // Every non-NaN pattern survives 16 -> 32 -> 16 bit-exactly; NaN stays NaN.
  void check_round_trip(const Format& format) {
    std::vector<uint16_t> all(65536), back(65536);
    std::vector<float> wide(65536);
    for (uint32_t h = 0; h < 65536; ++h) all[h] = uint16_t(h);
    format.cast_to_float(wide.data(), all.data(), all.size());
    format.cast_to_half(back.data(), wide.data(), wide.size());
    for (uint32_t h = 0; h < 65536; ++h) {
      if (ref_half_is_nan(format.ref, uint16_t(h))) {
        ASSERT_TRUE(ref_half_is_nan(format.ref, back[h])) << format.name << " 0x" << std::hex << h;
      } else {
        ASSERT_EQ(back[h], h) << format.name << " 0x" << std::hex << h;
      }
    }
  }
};

TEST_P(CastTest, Float16DecodesEveryPattern) { check_decode_all(kF16); }
TEST_P(CastTest, BFloat16DecodesEveryPattern) { check_decode_all(kBF16); }
TEST_P(CastTest, Float16EncodesDenseSampleAndTies) { check_encode_sample(kF16); }
TEST_P(CastTest, BFloat16EncodesDenseSampleAndTies) { check_encode_sample(kBF16); }
TEST_P(CastTest, Float16RoundTrips) { check_round_trip(kF16); }
TEST_P(CastTest, BFloat16RoundTrips) { check_round_trip(kBF16); }

// Tail lengths of the array casts (0 writes nothing).
TEST_P(CastTest, ArrayLengths) {
  for (size_t count : {0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 100}) {
    std::vector<float> src(count + 1, 0.f);
    for (size_t i = 0; i < count; ++i) src[i] = 0.1f * float(i) - 3.f;
    std::vector<uint16_t> half(count + 1, 0xabcd);
    kernels::cast_f32_to_f16(half.data(), src.data(), count);
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(half[i], kernels::f32_to_f16(src[i])) << count << " " << i;
    ASSERT_EQ(half[count], 0xabcd) << "wrote past count " << count;
    kernels::cast_f32_to_bf16(half.data(), src.data(), count);
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(half[i], kernels::f32_to_bf16(src[i])) << count << " " << i;
    ASSERT_EQ(half[count], 0xabcd) << "wrote past count " << count;
  }
}

INSTANTIATE_TEST_SUITE_P(AllPaths, CastTest, ::testing::ValuesIn(kAllIsas), isa_param_name);

// Named ties and edges, independent of any ISA.
TEST(ScalarCastTest, Float16NamedValues) {
  EXPECT_EQ(kernels::f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(kernels::f32_to_f16(1.0f + 0x1p-11f), 0x3c00);      // Tie, to even.
  EXPECT_EQ(kernels::f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);  // Tie, to even (up).
  EXPECT_EQ(kernels::f32_to_f16(65504.f), 0x7bff);
  EXPECT_EQ(kernels::f32_to_f16(65519.996f), 0x7bff);
  EXPECT_EQ(kernels::f32_to_f16(65520.f), 0x7c00);  // Tie above max: infinity.
  EXPECT_EQ(kernels::f32_to_f16(-1e10f), 0xfc00);
  EXPECT_EQ(kernels::f32_to_f16(0x1p-25f), 0x0000);  // Half the smallest subnormal.
  EXPECT_EQ(kernels::f32_to_f16(std::nextafter(0x1p-25f, 1.f)), 0x0001);
  EXPECT_EQ(kernels::f32_to_f16(0x1.8p-24f), 0x0002);  // Tie 1.5 ulp, to even.
  EXPECT_EQ(kernels::f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(kernels::f32_to_f16(0x1p-14f), 0x0400);
  EXPECT_TRUE(std::isnan(kernels::f16_to_f32(kernels::f32_to_f16(NAN))));
  EXPECT_EQ(kernels::f16_to_f32(0x0001), 0x1p-24f);
  EXPECT_EQ(kernels::f16_to_f32(0xfc00), -INFINITY);
}

TEST(ScalarCastTest, BFloat16NamedValues) {
  EXPECT_EQ(kernels::f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(kernels::f32_to_bf16(float_of(0x3f808000)), 0x3f80);  // Tie, to even.
  EXPECT_EQ(kernels::f32_to_bf16(float_of(0x3f818000)), 0x3f82);  // Tie, to even (up).
  EXPECT_EQ(kernels::f32_to_bf16(float_of(0x3f808001)), 0x3f81);
  EXPECT_EQ(kernels::f32_to_bf16(float_of(0x7f7fffff)), 0x7f80);  // Rounds up to infinity.
  EXPECT_EQ(kernels::f32_to_bf16(float_of(0x00010000)), 0x0001);  // Subnormal kept.
  EXPECT_TRUE(std::isnan(kernels::bf16_to_f32(kernels::f32_to_bf16(float_of(0x7f800001)))));
  EXPECT_TRUE(std::isnan(kernels::bf16_to_f32(kernels::f32_to_bf16(float_of(0xffffffff)))));
  EXPECT_EQ(kernels::bf16_to_f32(0xc040), -3.0f);
}

}  // namespace
}  // namespace kernels_test
}  // namespace hora
