// Casts between float32 and float16 / bfloat16: the array forms use the active ISA's table,
// the scalar forms the bit-exact software conversions of half.h.
#include "kernels/cpu/half.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/kernels.h"

namespace hora {
namespace kernels {

void cast_f32_to_f16(uint16_t* dst, const float* src, size_t count) {
  if (count != 0) detail::active_table().f32_to_f16(dst, src, count);
}
void cast_f16_to_f32(float* dst, const uint16_t* src, size_t count) {
  if (count != 0) detail::active_table().f16_to_f32(dst, src, count);
}
void cast_f32_to_bf16(uint16_t* dst, const float* src, size_t count) {
  if (count != 0) detail::active_table().f32_to_bf16(dst, src, count);
}
void cast_bf16_to_f32(float* dst, const uint16_t* src, size_t count) {
  if (count != 0) detail::active_table().bf16_to_f32(dst, src, count);
}

uint16_t f32_to_f16(float value) { return detail::half_from_float(value); }
float f16_to_f32(uint16_t bits) { return detail::half_to_float(bits); }
uint16_t f32_to_bf16(float value) { return detail::bhalf_from_float(value); }
float bf16_to_f32(uint16_t bits) { return detail::bhalf_to_float(bits); }

}  // namespace kernels
}  // namespace hora
