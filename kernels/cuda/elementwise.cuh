// What every kernel of kernels/cuda shares: per-dtype element traits, the reduce ops with
// kernels.h's semantics, the dtype switch that instantiates a kernel per dtype, and the launch
// shape. Internal to kernels/cuda (included by the .cu files only).
//
// Element rules (kernels.h): integers wrap (computed in an unsigned type at least 32 bits
// wide, so no promotion to int can overflow); float16/bfloat16 load as float32 and store
// rounded once (half_bits.cuh); min/max return the first operand when it is NaN, else the
// smaller/larger with the second operand winning ties, exactly the CPU's scalar formula, so
// NaN and signed-zero cases give the same bits; bool loads as truth (0/1) and has only min
// (and), max (or) and product (and).
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

#include "hora/data_type.h"
#include "hora/reduce_op.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/half_bits.cuh"
#include "kernels/cuda/launch.h"

namespace hora {
namespace kernels {
namespace cuda {
namespace detail {

template <typename E, typename C>
struct PlainTraits {
  using Elem = E;
  using Compute = C;
  static constexpr bool kIsBool = false;
  __device__ static C load(E e) { return static_cast<C>(e); }
  __device__ static E store(C c) { return static_cast<E>(c); }
};

template <DataType kDt>
struct Traits;
template <>
struct Traits<DataType::kUint8> : PlainTraits<uint8_t, uint8_t> {};
template <>
struct Traits<DataType::kInt8> : PlainTraits<int8_t, int8_t> {};
template <>
struct Traits<DataType::kInt16> : PlainTraits<int16_t, int16_t> {};
template <>
struct Traits<DataType::kUint16> : PlainTraits<uint16_t, uint16_t> {};
template <>
struct Traits<DataType::kInt32> : PlainTraits<int32_t, int32_t> {};
template <>
struct Traits<DataType::kInt64> : PlainTraits<int64_t, int64_t> {};
template <>
struct Traits<DataType::kFloat32> : PlainTraits<float, float> {};
template <>
struct Traits<DataType::kFloat64> : PlainTraits<double, double> {};
template <>
struct Traits<DataType::kFloat16> {
  using Elem = uint16_t;
  using Compute = float;
  static constexpr bool kIsBool = false;
  __device__ static float load(uint16_t e) { return half_to_float(e); }
  __device__ static uint16_t store(float c) { return half_from_float(c); }
};
template <>
struct Traits<DataType::kBFloat16> {
  using Elem = uint16_t;
  using Compute = float;
  static constexpr bool kIsBool = false;
  __device__ static float load(uint16_t e) { return bhalf_to_float(e); }
  __device__ static uint16_t store(float c) { return bhalf_from_float(c); }
};
// bool: one byte, loaded as its truth.
struct BoolTraits {
  using Elem = uint8_t;
  using Compute = uint8_t;
  static constexpr bool kIsBool = true;
  __device__ static uint8_t load(uint8_t e) { return e != 0 ? 1 : 0; }
  __device__ static uint8_t store(uint8_t c) { return c; }
};
template <>
struct Traits<DataType::kBool> : BoolTraits {};

// The reduce ops the kernels instantiate (kAverage runs as kSum).
enum class Op : int { kSum, kMin, kMax, kProduct };

template <typename C>
using Wide = std::conditional_t<(sizeof(C) < 4), uint32_t, std::make_unsigned_t<C>>;

template <DataType kDt, Op kOp>
__device__ __forceinline__ typename Traits<kDt>::Compute combine(typename Traits<kDt>::Compute a,
                                                                 typename Traits<kDt>::Compute b) {
  using C = typename Traits<kDt>::Compute;
  if constexpr (Traits<kDt>::kIsBool) {
    return kOp == Op::kMax ? static_cast<C>(a | b) : static_cast<C>(a & b);
  } else if constexpr (std::is_integral_v<C>) {
    using U = Wide<C>;
    if constexpr (kOp == Op::kSum) return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
    if constexpr (kOp == Op::kProduct) return static_cast<C>(static_cast<U>(a) * static_cast<U>(b));
    if constexpr (kOp == Op::kMin) return a < b ? a : b;
    return a > b ? a : b;
  } else {
    if constexpr (kOp == Op::kSum) return a + b;
    if constexpr (kOp == Op::kProduct) return a * b;
    if constexpr (kOp == Op::kMin) return a != a ? a : (a < b ? a : b);
    return a != a ? a : (a > b ? a : b);
  }
}

// Launch shape: 256 threads per block, grid-stride loops, at most kMaxBlocks blocks (plenty
// to fill any current GPU; more would only add block scheduling).
inline constexpr unsigned kThreads = 256;
inline constexpr unsigned kMaxBlocks = 4096;
inline unsigned blocks_for(size_t count) {
  const size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? (blocks == 0 ? 1 : blocks) : kMaxBlocks);
}

// 16-byte vectors: a thread moves one uint4 (ld/st.global.v4) per step instead of one element,
// so 2-byte elements no longer take eight times the memory transactions of a copy. The union
// views the word as its elements.
template <typename E>
union Vec16 {
  static constexpr int kCount = 16 / sizeof(E);
  uint4 word;
  E elem[kCount];
};

__device__ __forceinline__ bool aligned16(const void* a, const void* b, const void* c = nullptr) {
  return ((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) |
           reinterpret_cast<uintptr_t>(c)) %
          16) == 0;
}

// dst[i] = f(a[i], b[i]) for i < count over the grid's x dimension (b may be null: f ignores
// its second operand): 16-byte vectors when every pointer is 16-byte aligned (the same
// branch for every thread), then the tail (or everything) element by element.
template <typename E, typename F>
__device__ __forceinline__ void for_each_element(E* dst, const E* a, const E* b, size_t count,
                                                 F f) {
  using V = Vec16<E>;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t done = 0;
  if (aligned16(dst, a, b)) {
    const size_t vectors = count / V::kCount;
    const uint4* va = reinterpret_cast<const uint4*>(a);
    const uint4* vb = reinterpret_cast<const uint4*>(b);
    uint4* vd = reinterpret_cast<uint4*>(dst);
    for (size_t i = first; i < vectors; i += stride) {
      V x, y, r;
      x.word = va[i];
      y.word = b != nullptr ? vb[i] : x.word;
#pragma unroll
      for (int k = 0; k < V::kCount; ++k) r.elem[k] = f(x.elem[k], y.elem[k]);
      vd[i] = r.word;
    }
    done = vectors * V::kCount;
  }
  for (size_t i = done + first; i < count; i += stride)
    dst[i] = f(a[i], b != nullptr ? b[i] : a[i]);
}

// Threads to launch for `count` elements of `elem_bytes` (one per 16-byte vector).
inline size_t vector_units(size_t count, size_t elem_bytes) {
  const size_t per = 16 / elem_bytes;
  return (count + per - 1) / per;
}

template <DataType kDt>
struct DtypeTag {
  static constexpr DataType value = kDt;
};

// Calls f(DtypeTag<dtype>{}) and returns its Status; kInvalidArgument for a dtype value
// outside the enum.
template <class F>
Status for_dtype(DataType dtype, F&& f) {
  switch (dtype) {
    case DataType::kUint8: return f(DtypeTag<DataType::kUint8>{});
    case DataType::kInt8: return f(DtypeTag<DataType::kInt8>{});
    case DataType::kInt16: return f(DtypeTag<DataType::kInt16>{});
    case DataType::kUint16: return f(DtypeTag<DataType::kUint16>{});
    case DataType::kInt32: return f(DtypeTag<DataType::kInt32>{});
    case DataType::kInt64: return f(DtypeTag<DataType::kInt64>{});
    case DataType::kFloat16: return f(DtypeTag<DataType::kFloat16>{});
    case DataType::kBFloat16: return f(DtypeTag<DataType::kBFloat16>{});
    case DataType::kFloat32: return f(DtypeTag<DataType::kFloat32>{});
    case DataType::kFloat64: return f(DtypeTag<DataType::kFloat64>{});
    case DataType::kBool: return f(DtypeTag<DataType::kBool>{});
    default: break;
  }
  return Status::invalid_argument("cuda kernels: no kernel for dtype value " +
                                  std::to_string(static_cast<int>(dtype)));
}

}  // namespace detail
}  // namespace cuda
}  // namespace kernels
}  // namespace hora
