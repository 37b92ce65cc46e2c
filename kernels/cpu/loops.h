// The kernel loops, written once and instantiated per ISA: make_table<Policy>() fills a
// KernelTable from a Policy that names one Lanes type per dtype (Policy::Lanes<kDt>).
// Internal to kernels/cpu; included only by the isa_*.cc translation units, each of which
// is compiled with its own -m flags (unnamed namespace: see kernel_table.h).
//
// Loop schedule (binary, scale, convert alike): blocks of kUnroll registers, then single
// registers, then the last < kWidth elements one at a time with ScalarLanes. Each block
// loads all its inputs before it stores, so dst may alias a source exactly.
#pragma once

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cpu/lanes.h"
#include "kernels/round_scaled.h"

namespace hora {
namespace kernels {
namespace detail {
namespace {

inline constexpr int kUnroll = 4;

template <class L, int kOp>
inline typename L::Reg combine(typename L::Reg a, typename L::Reg b) {
  if constexpr (kOp == kOpSum || kOp == kOpAverage)
    return L::add(a, b);
  else if constexpr (kOp == kOpProduct)
    return L::mul(a, b);
  else if constexpr (kOp == kOpMin)
    return L::min(a, b);
  else
    return L::max(a, b);
}

// Runs body.run<L, kRegs>(element_index) over [0, count) in the schedule above: VL covers
// whole registers, SL the tail.
template <class VL, class SL, class Body>
inline void for_each_block(size_t count, const Body& body) {
  size_t i = 0;
  if constexpr (VL::kWidth > 1) {
    for (; i + kUnroll * VL::kWidth <= count; i += kUnroll * VL::kWidth) {
      body.template run<VL, kUnroll>(i);
    }
    for (; i + VL::kWidth <= count; i += VL::kWidth) body.template run<VL, 1>(i);
  }
  for (; i < count; ++i) body.template run<SL, 1>(i);
}

// dst = src * factor (floats).
template <size_t kElemBytes, typename Compute>
struct ScaleBody {
  char* dst;
  const char* src;
  Compute factor;
  template <class L, int kRegs>
  void run(size_t i) const {
    const typename L::Reg f = L::splat(factor);
    typename L::Reg r[kRegs];
    for (int k = 0; k < kRegs; ++k)
      r[k] = L::mul(L::load(src + (i + k * L::kWidth) * kElemBytes), f);
    for (int k = 0; k < kRegs; ++k) L::store(dst + (i + k * L::kWidth) * kElemBytes, r[k]);
  }
};

// dst (and dst2 when kSecond) = a op b, elements of kElemBytes, times factor when kScale: one
// pass, each block loaded before it is stored, so dst and dst2 may alias a or b exactly.
template <int kOp, size_t kElemBytes, typename Compute, bool kScale, bool kSecond>
struct BinaryOutBody {
  char* dst;
  char* dst2;
  const char* a;
  const char* b;
  Compute factor;
  template <class L, int kRegs>
  void run(size_t i) const {
    typename L::Reg r[kRegs];
    for (int k = 0; k < kRegs; ++k) {
      const size_t at = (i + k * L::kWidth) * kElemBytes;
      r[k] = combine<L, kOp>(L::load(a + at), L::load(b + at));
    }
    if constexpr (kScale) {
      const typename L::Reg f = L::splat(factor);
      for (int k = 0; k < kRegs; ++k) r[k] = L::mul(r[k], f);
    }
    for (int k = 0; k < kRegs; ++k) {
      const size_t at = (i + k * L::kWidth) * kElemBytes;
      L::store(dst + at, r[k]);
      if constexpr (kSecond) L::store(dst2 + at, r[k]);
    }
  }
};

template <class VL, int kDt, int kOp, bool kScale, bool kSecond>
void binary_out_pass(void* dst, void* dst2, const void* a, const void* b, size_t count,
                     double factor) {
  using SL = ScalarLanes<kDt>;
  using Compute = typename SL::Compute;
  const BinaryOutBody<kOp, SL::kElemBytes, Compute, kScale, kSecond> body{
      static_cast<char*>(dst), static_cast<char*>(dst2), static_cast<const char*>(a),
      static_cast<const char*>(b), static_cast<Compute>(factor)};
  for_each_block<VL, SL>(count, body);
}

// dst = a op b.
template <class VL, int kDt, int kOp>
void binary_kernel(void* dst, const void* a, const void* b, size_t count) {
  binary_out_pass<VL, kDt, kOp, false, false>(dst, nullptr, a, b, count, 1.0);
}

// The combined value is scaled in registers only where the arithmetic is the dtype's own
// (float32, float64): there the bits are those of binary_kernel then float_scale_kernel.
// Elsewhere the factor must be 1 (kernel_table.h).
template <class VL, int kDt, int kOp>
void binary_out_kernel(void* dst, void* dst2, const void* a, const void* b, size_t count,
                       double factor) {
  using SL = ScalarLanes<kDt>;
  using Compute = typename SL::Compute;
  if constexpr (std::is_floating_point_v<Compute> && sizeof(Compute) == SL::kElemBytes) {
    if (factor != 1.0) {
      if (dst2 != nullptr) {
        binary_out_pass<VL, kDt, kOp, true, true>(dst, dst2, a, b, count, factor);
      } else {
        binary_out_pass<VL, kDt, kOp, true, false>(dst, dst2, a, b, count, factor);
      }
      return;
    }
  }
  if (dst2 != nullptr) {
    binary_out_pass<VL, kDt, kOp, false, true>(dst, dst2, a, b, count, factor);
  } else {
    binary_out_pass<VL, kDt, kOp, false, false>(dst, dst2, a, b, count, factor);
  }
}

template <class VL, int kDt>
void float_scale_kernel(void* dst, const void* src, size_t count, double factor) {
  using SL = ScalarLanes<kDt>;
  using Compute = typename SL::Compute;
  const ScaleBody<SL::kElemBytes, Compute> body{
      static_cast<char*>(dst), static_cast<const char*>(src), static_cast<Compute>(factor)};
  for_each_block<VL, SL>(count, body);
}

// Integers: float64 product rounded half away from zero (round_scaled: saturating at long
// long's limits), wrapped to the width.
// Not vectorised: integer scaling is rare (integer averages) and llround has no vector form.
template <int kDt>
void int_scale_kernel(void* dst, const void* src, size_t count, double factor) {
  using SL = ScalarLanes<kDt>;
  using Elem = typename SL::Elem;
  using Unsigned = std::make_unsigned_t<Elem>;
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  for (size_t i = 0; i < count; ++i) {
    const long long rounded =
        round_scaled(static_cast<double>(SL::load(s + i * sizeof(Elem))) * factor);
    SL::store(d + i * sizeof(Elem),
              static_cast<Elem>(static_cast<Unsigned>(static_cast<unsigned long long>(rounded))));
  }
}

// dst (dtype kDstDt) = src (dtype kSrcDt); the two dtypes' Lanes share one Reg type.
template <int kSrcDt, int kDstDt, class DstVL>
struct ConvertBody {
  char* dst;
  const char* src;
  template <class L, int kRegs>
  void run(size_t i) const {
    // L is the source lanes for_each_block picked; the destination lanes of its width.
    using D = std::conditional_t<L::kWidth == 1, ScalarLanes<kDstDt>, DstVL>;
    constexpr size_t kSrcBytes = ScalarLanes<kSrcDt>::kElemBytes;
    constexpr size_t kDstBytes = ScalarLanes<kDstDt>::kElemBytes;
    typename L::Reg r[kRegs];
    for (int k = 0; k < kRegs; ++k) r[k] = L::load(src + (i + k * L::kWidth) * kSrcBytes);
    for (int k = 0; k < kRegs; ++k) D::store(dst + (i + k * L::kWidth) * kDstBytes, r[k]);
  }
};

template <class P, int kSrcDt, int kDstDt>
void convert_kernel(void* dst, const void* src, size_t count) {
  using SrcVL = typename P::template Lanes<kSrcDt>;
  using DstVL = typename P::template Lanes<kDstDt>;
  static_assert(SrcVL::kWidth == DstVL::kWidth, "convert needs lanes of one width");
  const ConvertBody<kSrcDt, kDstDt, DstVL> body{static_cast<char*>(dst),
                                                static_cast<const char*>(src)};
  for_each_block<SrcVL, ScalarLanes<kSrcDt>>(count, body);
}

// dst = src, `bytes` bytes, no overlap; kernels::copy calls it only for copies memcpy would
// not do well. REQUIRES: bytes >= kCopyVectorFrom (kernel_table.h).
// One lane: memcpy. Otherwise VL (byte lanes) registers: one unaligned register at dst, then
// blocks of kUnroll registers stored at addresses aligned to a register (the first aligned
// byte on), then the last block ending at the last byte, unaligned (it may rewrite bytes
// already written, with the same values).
template <class VL>
void copy_kernel(void* dst, const void* src, size_t bytes) {
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  if constexpr (VL::kWidth == 1) {
    memcpy(d, s, bytes);
  } else {
    constexpr size_t kReg = sizeof(typename VL::Reg);
    constexpr size_t kBlock = kUnroll * kReg;
    static_assert(kCopyVectorFrom >= 2 * kBlock, "the head and the last block fit");
    VL::store(d, VL::load(s));
    size_t i = (kReg - reinterpret_cast<uintptr_t>(d) % kReg) % kReg;
    typename VL::Reg r[kUnroll];
    for (; i + kBlock <= bytes; i += kBlock) {
      for (int k = 0; k < kUnroll; ++k) r[k] = VL::load(s + i + k * kReg);
      for (int k = 0; k < kUnroll; ++k) VL::store(d + i + k * kReg, r[k]);
    }
    if (i < bytes) {
      const size_t last = bytes - kBlock;
      for (int k = 0; k < kUnroll; ++k) r[k] = VL::load(s + last + k * kReg);
      for (int k = 0; k < kUnroll; ++k) VL::store(d + last + k * kReg, r[k]);
    }
  }
}

// bool gets min, max and product only; its sum, average and scale entries stay null.
template <class P, int kDt>
void fill_dtype(KernelTable& table) {
  using VL = typename P::template Lanes<kDt>;
  BinaryFn* row = table.binary[kDt];
  BinaryOutFn* out = table.binary_out[kDt];
  row[kOpMin] = &binary_kernel<VL, kDt, kOpMin>;
  row[kOpMax] = &binary_kernel<VL, kDt, kOpMax>;
  row[kOpProduct] = &binary_kernel<VL, kDt, kOpProduct>;
  out[kOpMin] = &binary_out_kernel<VL, kDt, kOpMin>;
  out[kOpMax] = &binary_out_kernel<VL, kDt, kOpMax>;
  out[kOpProduct] = &binary_out_kernel<VL, kDt, kOpProduct>;
  if constexpr (kDt != kDtBool) {
    row[kOpSum] = &binary_kernel<VL, kDt, kOpSum>;
    row[kOpAverage] = &binary_kernel<VL, kDt, kOpSum>;
    out[kOpSum] = &binary_out_kernel<VL, kDt, kOpSum>;
    out[kOpAverage] = &binary_out_kernel<VL, kDt, kOpSum>;
    if constexpr (std::is_integral_v<typename VL::Compute>) {
      table.scale_copy[kDt] = &int_scale_kernel<kDt>;
    } else {
      table.scale_copy[kDt] = &float_scale_kernel<VL, kDt>;
    }
  }
}

// P provides `template <int kDt> using Lanes = ...` for every dtype.
template <class P>
KernelTable make_table() {
  KernelTable table{};
  fill_dtype<P, kDtUint8>(table);
  fill_dtype<P, kDtInt8>(table);
  fill_dtype<P, kDtInt32>(table);
  fill_dtype<P, kDtInt64>(table);
  fill_dtype<P, kDtFloat16>(table);
  fill_dtype<P, kDtBFloat16>(table);
  fill_dtype<P, kDtFloat32>(table);
  fill_dtype<P, kDtFloat64>(table);
  fill_dtype<P, kDtInt16>(table);
  fill_dtype<P, kDtUint16>(table);
  fill_dtype<P, kDtBool>(table);
  table.f32_to_f16 = &convert_kernel<P, kDtFloat32, kDtFloat16>;
  table.f16_to_f32 = &convert_kernel<P, kDtFloat16, kDtFloat32>;
  table.f32_to_bf16 = &convert_kernel<P, kDtFloat32, kDtBFloat16>;
  table.bf16_to_f32 = &convert_kernel<P, kDtBFloat16, kDtFloat32>;
  table.copy = &copy_kernel<typename P::template Lanes<kDtUint8>>;
  return table;
}

}  // namespace
}  // namespace detail
}  // namespace kernels
}  // namespace hora
