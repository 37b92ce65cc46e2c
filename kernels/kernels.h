// kernels: math on raw buffers, no communication. The entry point of the kernels layer.
//
// Every function is a pure function of (pointers, count, dtype): no allocation, no state
// beyond the ISA chosen once per process (see select_isa). Thread-safe. Pointers need no
// alignment. `dst` may alias `src` (or `a`/`b`) exactly; partial overlap is undefined.
//
// Semantics (tested against a scalar reference in tests/kernels/):
// - kSum/kAverage add (kAverage is a sum here; scaling is separate), kProduct multiplies,
//   kMin/kMax take the smaller/larger; for floats a NaN in either operand gives NaN for every
//   op (min/max propagate NaN, unlike fmin/fmax).
// - Integers wrap on overflow (two's complement), for every integer dtype.
// - bool (one byte; 0 is false, any other byte true) writes 0 or 1: kMin and kProduct are
//   logical and, kMax logical or. kSum and kAverage are not defined on bool, nor is scale by
//   a factor other than 1: calling them is a bug that aborts (callers refuse them first with
//   check_reduce_op / is_scale_defined, hora/reduce_op.h).
// - float16 and bfloat16 are converted to float32 per element, combined in float32 and
//   rounded once back, round-to-nearest-even; subnormals and infinities are kept.
// - scale: floats multiply by the factor in their own precision (float16/bfloat16 via float32).
//   Integers are converted to float64, multiplied, and rounded to nearest with ties away from
//   zero (std::llround), then wrapped to the dtype's width, as Horovod's ScaleBuffer does for
//   integer tensors (it computes in double and converts back). A product beyond int64's range
//   saturates at its limits (round_scaled.h), on the CPU and the GPU alike.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hora/data_type.h"
#include "hora/reduce_op.h"

namespace hora {
namespace kernels {

enum class Isa : uint8_t { kScalar = 0, kAvx2, kAvx512 };

const char* isa_name(Isa isa);
// The best ISA this CPU supports (cpuid at first call).
Isa best_isa();
// True when the CPU supports `isa`.
bool isa_supported(Isa isa);
// Chooses the ISA used by every later call in this process. Returns false (and leaves the
// choice unchanged) when the CPU lacks it. Call once, at init, before any kernel runs.
bool select_isa(Isa isa);
// The ISA in use.
Isa current_isa();

// dst[i] = dst[i] op src[i] for i < count.
void reduce(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op);
// dst[i] = a[i] op b[i]. dst may alias a or b.
void reduce3(void* dst, const void* a, const void* b, size_t count, DataType dtype, ReduceOp op);
// dst[i] = (a[i] op b[i]) * factor, and the same into dst2 unless it is null: the bits of
// reduce3 followed by scale (for float16, bfloat16 and the integers the combined value is
// rounded to the dtype before it is scaled), in one pass over a and b where the arithmetic is
// the dtype's own (float32, float64; any dtype when factor is 1). dst and dst2 may alias a or b
// exactly. A factor other than 1 must be defined for the dtype (is_scale_defined).
void reduce3_scaled(void* dst, void* dst2, const void* a, const void* b, size_t count,
                    DataType dtype, ReduceOp op, double factor);
// buf[i] *= factor.
void scale(void* buf, size_t count, DataType dtype, double factor);
// dst[i] = src[i] * factor (a plain copy when factor == 1.0). Used to pack and unpack
// fusion buffers with the pre/post-scale applied in the same pass.
void scale_copy(void* dst, const void* src, size_t count, DataType dtype, double factor);

// dst[i] = src[i] for i < bytes, as memcpy: a no-op when dst == src, any other overlap
// undefined. The collectives' data path copies with it rather than memcpy. glibc's memcpy
// takes `rep movsb` from about 2 KiB up to a cache-size threshold, and on AMD EPYC that ran
// at 0.57-0.60x its usual speed into a destination 16 bytes past a page from a page-aligned
// source: a glibc heap block (a std::vector of a few MiB) filled from a shared slot. From
// 2 KiB on, where dst and src lie at different offsets in a cache line, this is the active
// ISA's vector loop with its stores aligned to a register, at memcpy's usual speed whatever
// the alignment (kernels_bench: copy against memcpy); elsewhere memcpy itself.
void copy(void* dst, const void* src, size_t bytes);

// Casts, round-to-nearest-even, NaN stays NaN, overflow goes to infinity.
void cast_f32_to_f16(uint16_t* dst, const float* src, size_t count);
void cast_f16_to_f32(float* dst, const uint16_t* src, size_t count);
void cast_f32_to_bf16(uint16_t* dst, const float* src, size_t count);
void cast_bf16_to_f32(float* dst, const uint16_t* src, size_t count);

// Scalar conversions, exposed for tests and for code outside the hot path.
uint16_t f32_to_f16(float value);
float f16_to_f32(uint16_t bits);
uint16_t f32_to_bf16(float value);
float bf16_to_f32(uint16_t bits);

}  // namespace kernels
}  // namespace hora
