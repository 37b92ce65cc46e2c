// An independent scalar reference for the kernels tests, written without looking at the
// library's bit tricks: 16-bit floats are decoded with ldexp and encoded by searching the
// sorted table of every finite value for the nearest one (ties to the even bit pattern);
// integer ops wrap through uint64_t. Elements are passed as raw bytes (any alignment).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hora/data_type.h"
#include "hora/reduce_op.h"

namespace hora {
namespace kernels_test {

// A 16-bit float format: 1 sign bit, exponent_bits, mantissa_bits (float16: 5/10,
// bfloat16: 8/7).
struct HalfFormat {
  int exponent_bits;
  int mantissa_bits;
};
inline constexpr HalfFormat kF16Format{5, 10};
inline constexpr HalfFormat kBF16Format{8, 7};

// Decodes 16 bits; NaN patterns give a quiet float NaN.
float ref_half_to_float(HalfFormat format, uint16_t bits);
// Nearest value, ties to the even pattern; overflow to infinity (a magnitude at or above the
// midpoint between the largest finite value and the next power of two); NaN to a NaN.
uint16_t ref_float_to_half(HalfFormat format, float value);
bool ref_half_is_nan(HalfFormat format, uint16_t bits);

// out = a op b for one element of `dtype`, following kernels.h: kAverage adds, integers wrap,
// a NaN operand gives NaN, min/max pick `a < b ? a : b` / `a > b ? a : b`; bool min/product
// are logical and, max logical or (sum/average on bool are undefined: out = 0xff).
void ref_combine(DataType dtype, ReduceOp op, const void* a, const void* b, void* out);
// out = in * factor by the scale rules of kernels.h (bool: undefined, out = 0xff).
void ref_scale(DataType dtype, double factor, const void* in, void* out);

// True when the two elements are the same value: equal bits, or both NaN.
bool same_element(DataType dtype, const void* x, const void* y);
// The element's value and bits, for failure messages.
std::string element_string(DataType dtype, const void* p);

// count random elements: integers and 16-bit floats as random bits (so NaN, infinities and
// subnormals occur), float32/float64 mostly moderate values with some random bit patterns,
// bool half 0, half non-zero (mostly 1, some other bytes).
void fill_random(DataType dtype, void* dst, size_t count, uint64_t seed);

// A byte buffer whose data() is `offset_bytes` past a malloc'd (16-byte aligned) block.
class Buffer {
 public:
  Buffer(size_t bytes, size_t offset_bytes)
      : storage_(bytes + offset_bytes + 1), offset_(offset_bytes) {}
  uint8_t* data() { return storage_.data() + offset_; }
  const uint8_t* data() const { return storage_.data() + offset_; }

 private:
  std::vector<uint8_t> storage_;
  size_t offset_;
};

}  // namespace kernels_test
}  // namespace hora
