// Scalar float16 / bfloat16 <-> float32 conversions, bit-exact with the F16C / AVX-512
// instructions the vector paths use: round-to-nearest-even, subnormals and infinities kept,
// NaN stays NaN (quiet, sign and top payload bits kept). Internal to kernels/cpu.
//
// Everything is in an unnamed namespace: this header is included by translation units built
// with different -m flags, and TU-local copies cannot be mixed up by the linker.
#pragma once

#include <stdint.h>
#include <string.h>

namespace hora {
namespace kernels {
namespace detail {
namespace {

inline uint32_t float_bits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float bits_float(uint32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

// Shifts `mantissa` right by `shift` (1..31) rounding to nearest, ties to even.
inline uint32_t shift_round_even(uint32_t mantissa, uint32_t shift) {
  const uint32_t kept = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}

inline uint16_t half_from_float(float value) {
  const uint32_t x = float_bits(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) {  // NaN: quiet it, keep the top payload bits.
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  if (abs >= 0x477ff000u) {  // >= 65520 (halfway past the largest finite): infinity.
    return static_cast<uint16_t>(sign | 0x7c00u);
  }
  if (abs < 0x38800000u) {  // Below 2^-14: a float16 subnormal (or zero).
    if (abs <= 0x33000000u) return static_cast<uint16_t>(sign);  // <= 2^-25 rounds to 0.
    const uint32_t exponent = abs >> 23;                         // 102..112
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    return static_cast<uint16_t>(sign | shift_round_even(mantissa, 126u - exponent));
  }
  // Normal: rebias the exponent (127 -> 15); a mantissa carry rolls into the exponent.
  return static_cast<uint16_t>(sign | shift_round_even(abs - (112u << 23), 13u));
}

inline float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {  // Zero or subnormal: mantissa * 2^-24, exact in float32.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return bits_float(float_bits(magnitude) | sign);
  }
  if (exponent == 0x1f) {  // Infinity, or NaN (quieted).
    return bits_float(sign | 0x7f800000u | (mantissa << 13) | (mantissa ? 0x400000u : 0u));
  }
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

inline uint16_t bhalf_from_float(float value) {
  const uint32_t x = float_bits(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

inline float bhalf_to_float(uint16_t bits) { return bits_float(static_cast<uint32_t>(bits) << 16); }

}  // namespace
}  // namespace detail
}  // namespace kernels
}  // namespace hora
