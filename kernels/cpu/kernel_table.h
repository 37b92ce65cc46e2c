// KernelTable: one ISA's kernels as plain function pointers. Internal to kernels/cpu.
//
// isa_scalar.cc, isa_avx2.cc and isa_avx512.cc each fill one table (once, on first use);
// dispatch.cc picks the table of the ISA in use. Tables are immutable after construction
// and safe to read from any thread.
//
// This header deliberately includes no hora header and no C++ library header with inline
// code: it is included by translation units compiled with -mavx2 / -mavx512f, and an inline
// function emitted there as a weak symbol could be picked by the linker for the whole
// program, and then fault on a CPU without that ISA. So the DataType / ReduceOp values are
// repeated below as plain ints; dispatch.cc static_asserts that they match the enums.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace hora {
namespace kernels {
namespace detail {

// Indices into KernelTable, equal to static_cast<int>(DataType::k...).
inline constexpr int kDtUint8 = 0;
inline constexpr int kDtInt8 = 1;
inline constexpr int kDtInt32 = 2;
inline constexpr int kDtInt64 = 3;
inline constexpr int kDtFloat16 = 4;
inline constexpr int kDtBFloat16 = 5;
inline constexpr int kDtFloat32 = 6;
inline constexpr int kDtFloat64 = 7;
inline constexpr int kDtInt16 = 8;
inline constexpr int kDtUint16 = 9;
inline constexpr int kDtBool = 10;
inline constexpr int kNumDt = 11;

// Equal to static_cast<int>(ReduceOp::k...).
inline constexpr int kOpSum = 0;
inline constexpr int kOpAverage = 1;
inline constexpr int kOpMin = 2;
inline constexpr int kOpMax = 3;
inline constexpr int kOpProduct = 4;
inline constexpr int kNumOp = 5;

// dst[i] = a[i] op b[i]; dst may alias a or b exactly.
using BinaryFn = void (*)(void* dst, const void* a, const void* b, size_t count);
// dst[i] = (a[i] op b[i]) * factor, and the same into dst2 unless it is null, in one pass;
// dst and dst2 may alias a or b exactly. A factor other than 1 is applied by the float32 and
// float64 entries only (kernels.h: reduce3_scaled scales the other dtypes in a second pass).
using BinaryOutFn = void (*)(void* dst, void* dst2, const void* a, const void* b, size_t count,
                             double factor);
// dst[i] = src[i] * factor with the dtype's scale rule (kernels.h); dst may alias src.
using ScaleFn = void (*)(void* dst, const void* src, size_t count, double factor);
// Element-wise conversion between float32 and a 16-bit float format.
using ConvertFn = void (*)(void* dst, const void* src, size_t count);
// dst = src, `bytes` bytes; no overlap (kernels.h: copy).
using CopyFn = void (*)(void* dst, const void* src, size_t bytes);
// kernels::copy hands a copy to memcpy below kCopyVectorFrom bytes, where memcpy's own path is
// vector moves, and when dst - src is a multiple of kCopyAlignedAlike (the same offset in a
// cache line), where its string instruction runs at its best; only the rest reaches a table's
// copy (on some CPUs `rep movsb` slows down when the two are not aligned alike).
inline constexpr size_t kCopyVectorFrom = 2048;
inline constexpr size_t kCopyAlignedAlike = 64;

// Entries an op does not define are null: binary[kDtBool] and binary_out[kDtBool] at kOpSum and
// kOpAverage, and scale_copy[kDtBool] (sum, average and scaling mean nothing on truth values).
struct KernelTable {
  BinaryFn binary[kNumDt][kNumOp];
  BinaryOutFn binary_out[kNumDt][kNumOp];
  ScaleFn scale_copy[kNumDt];
  ConvertFn f32_to_f16;
  ConvertFn f16_to_f32;
  ConvertFn f32_to_bf16;
  ConvertFn bf16_to_f32;
  CopyFn copy;
};

// Each is defined in its own ISA translation unit. REQUIRES: the CPU supports that ISA
// (the AVX tables are built with AVX instructions).
const KernelTable& scalar_table();
const KernelTable& avx2_table();
const KernelTable& avx512_table();

// The table of current_isa(); defined in dispatch.cc.
const KernelTable& active_table();

}  // namespace detail
}  // namespace kernels
}  // namespace hora
