// float16 / bfloat16 <-> float32 on the device, bit-exact with kernels/cpu/half.h (which the
// CPU kernels and the F16C instructions agree with): round-to-nearest-even, subnormals and
// infinities kept, NaN quieted with its sign and top payload bits kept. CUDA's own
// __float2half would return a canonical NaN and so differ from the CPU. Internal to
// kernels/cuda.
#pragma once

#include <stdint.h>

namespace hora {
namespace kernels {
namespace cuda {
namespace detail {

__device__ __forceinline__ uint32_t shift_round_even(uint32_t mantissa, uint32_t shift) {
  const uint32_t kept = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}

__device__ __forceinline__ uint16_t half_from_float(float value) {
  const uint32_t x = __float_as_uint(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (abs < 0x38800000u) {
    if (abs <= 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    return static_cast<uint16_t>(sign | shift_round_even(mantissa, 126u - exponent));
  }
  return static_cast<uint16_t>(sign | shift_round_even(abs - (112u << 23), 13u));
}

__device__ __forceinline__ float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return __uint_as_float(__float_as_uint(magnitude) | sign);
  }
  if (exponent == 0x1f) {
    return __uint_as_float(sign | 0x7f800000u | (mantissa << 13) | (mantissa ? 0x400000u : 0u));
  }
  return __uint_as_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

__device__ __forceinline__ uint16_t bhalf_from_float(float value) {
  const uint32_t x = __float_as_uint(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

__device__ __forceinline__ float bhalf_to_float(uint16_t bits) {
  return __uint_as_float(static_cast<uint32_t>(bits) << 16);
}

}  // namespace detail
}  // namespace cuda
}  // namespace kernels
}  // namespace hora
