// Lanes: how one ISA loads, combines and stores a register's worth of one dtype. Internal
// to kernels/cpu; included only by the isa_*.cc translation units.
//
// A Lanes type L has: Compute (the element type of the arithmetic: the dtype itself, or
// float for float16/bfloat16), Reg (a register of Compute: a GCC vector type, or Compute
// itself when kWidth == 1), kWidth (elements per Reg), load/store of kWidth elements at an
// unaligned byte address, splat, and add/mul/min/max following kernels.h (integers wrap,
// float min/max propagate NaN). The generic Math below serves every dtype; an ISA shadows
// min/max (and load/store for 16-bit floats) with intrinsics.
//
// Everything is in an unnamed namespace so that each ISA translation unit gets its own copy
// built with its own -m flags (see kernel_table.h).
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>

#include "kernels/cpu/half.h"
#include "kernels/cpu/kernel_table.h"

namespace hora {
namespace kernels {
namespace detail {
namespace {

template <typename T, size_t kLanes>
struct RegOf {
  typedef T type __attribute__((vector_size(kLanes * sizeof(T))));
};
template <typename T>
struct RegOf<T, 1> {
  using type = T;
};
// kLanes elements of T: a GCC vector, or T itself for one lane.
template <typename T, size_t kLanes>
using RegT = typename RegOf<T, kLanes>::type;

// Element-wise arithmetic on R (a vector of C or a single C), valid for both.
template <typename C, typename R>
struct Math {
  static constexpr size_t kLanes = sizeof(R) / sizeof(C);
  static R add(R a, R b) {
    if constexpr (std::is_integral_v<C>) {
      using U = RegT<std::make_unsigned_t<C>, kLanes>;  // Unsigned: wraps without UB.
      return (R)((U)a + (U)b);
    } else {
      return a + b;
    }
  }
  static R mul(R a, R b) {
    if constexpr (std::is_integral_v<C> && kLanes == 1) {
      // One lane is a plain integer: a type narrower than int is promoted to (signed) int
      // before multiplying, and 65535 * 65535 overflows it. Multiply as unsigned int.
      using U =
          std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, std::make_unsigned_t<C>>;
      return static_cast<R>(static_cast<U>(a) * static_cast<U>(b));
    } else if constexpr (std::is_integral_v<C>) {
      using U = RegT<std::make_unsigned_t<C>, kLanes>;  // vector lanes are not promoted
      return (R)((U)a * (U)b);
    } else {
      return a * b;
    }
  }
  // a < b ? a : b, and a NaN in either operand gives NaN (the same lane choice as the x86
  // min/max instructions followed by a NaN fix-up, so every ISA returns the same bits).
  static R min(R a, R b) {
    const R m = a < b ? a : b;
    if constexpr (std::is_integral_v<C>)
      return m;
    else
      return a != a ? a : m;
  }
  static R max(R a, R b) {
    const R m = a > b ? a : b;
    if constexpr (std::is_integral_v<C>)
      return m;
    else
      return a != a ? a : m;
  }
};

// bool (one byte, 0 false, anything else true): results are 0 or 1; min and product are
// logical and, max logical or. No add: sum and average are not defined on bool, and the
// table leaves them null (loops.h), so an instantiation of add here would be a bug.
template <typename C, typename R>
struct BoolMath {
  // 1 in every lane whose byte is non-zero, else 0.
  static R truth(R x) {
    if constexpr (std::is_same_v<R, C>)
      return static_cast<R>(x != 0);
    else
      return (R)(x != 0) & (R{} + 1);
  }
  static R min(R a, R b) { return (R)(truth(a) & truth(b)); }
  static R max(R a, R b) { return (R)(truth(a) | truth(b)); }
  static R mul(R a, R b) { return min(a, b); }
};

template <int kDt, typename C, typename R>
using MathFor = std::conditional_t<kDt == kDtBool, BoolMath<C, R>, Math<C, R>>;

template <int kDt>
struct DtypeTraits;
template <>
struct DtypeTraits<kDtUint8> {
  using Elem = uint8_t;
  using Compute = uint8_t;
};
template <>
struct DtypeTraits<kDtInt8> {
  using Elem = int8_t;
  using Compute = int8_t;
};
template <>
struct DtypeTraits<kDtInt32> {
  using Elem = int32_t;
  using Compute = int32_t;
};
template <>
struct DtypeTraits<kDtInt64> {
  using Elem = int64_t;
  using Compute = int64_t;
};
template <>
struct DtypeTraits<kDtFloat16> {
  using Elem = uint16_t;
  using Compute = float;
};
template <>
struct DtypeTraits<kDtBFloat16> {
  using Elem = uint16_t;
  using Compute = float;
};
template <>
struct DtypeTraits<kDtFloat32> {
  using Elem = float;
  using Compute = float;
};
template <>
struct DtypeTraits<kDtFloat64> {
  using Elem = double;
  using Compute = double;
};
template <>
struct DtypeTraits<kDtInt16> {
  using Elem = int16_t;
  using Compute = int16_t;
};
template <>
struct DtypeTraits<kDtUint16> {
  using Elem = uint16_t;
  using Compute = uint16_t;
};
template <>
struct DtypeTraits<kDtBool> {
  using Elem = uint8_t;
  using Compute = uint8_t;
};

// One element at a time; the scalar ISA and the tails of the vector loops.
template <int kDt>
struct ScalarLanes
    : MathFor<kDt, typename DtypeTraits<kDt>::Compute, typename DtypeTraits<kDt>::Compute> {
  using Elem = typename DtypeTraits<kDt>::Elem;
  using Compute = typename DtypeTraits<kDt>::Compute;
  using Reg = Compute;
  static constexpr size_t kWidth = 1;
  static constexpr size_t kElemBytes = sizeof(Elem);
  static Reg splat(Compute value) { return value; }
  static Reg load(const char* p) {
    Elem e;
    memcpy(&e, p, sizeof e);
    if constexpr (kDt == kDtFloat16)
      return half_to_float(e);
    else if constexpr (kDt == kDtBFloat16)
      return bhalf_to_float(e);
    else
      return e;
  }
  static void store(char* p, Reg r) {
    Elem e;
    if constexpr (kDt == kDtFloat16)
      e = half_from_float(r);
    else if constexpr (kDt == kDtBFloat16)
      e = bhalf_from_float(r);
    else
      e = r;
    memcpy(p, &e, sizeof e);
  }
};

// kBytes / sizeof(T) elements of a plain type per register (memcpy compiles to vmovdqu), with
// the arithmetic of M (Math, or BoolMath for bool).
template <typename T, size_t kBytes, template <typename, typename> class M = Math>
struct VecLanes : M<T, RegT<T, kBytes / sizeof(T)>> {
  using Compute = T;
  static constexpr size_t kWidth = kBytes / sizeof(T);
  using Reg = RegT<T, kWidth>;
  static Reg splat(T value) { return Reg{} + value; }
  static Reg load(const char* p) {
    Reg r;
    memcpy(&r, p, sizeof r);
    return r;
  }
  static void store(char* p, Reg r) { memcpy(p, &r, sizeof r); }
};

// The integers' and bool's Lanes: one ISA-independent definition for every width.
template <int kDt, size_t kBytes>
using IntLanes = std::conditional_t<kDt == kDtBool, VecLanes<uint8_t, kBytes, BoolMath>,
                                    VecLanes<typename DtypeTraits<kDt>::Elem, kBytes>>;

// An ISA's Lanes for dtype kDt: its own float Lanes, VecLanes of kBytes for the integers and
// bool.
template <int kDt, size_t kBytes, class F16L, class BF16L, class F32L, class F64L>
using PickLanes = std::conditional_t<
    kDt == kDtFloat16, F16L,
    std::conditional_t<
        kDt == kDtBFloat16, BF16L,
        std::conditional_t<kDt == kDtFloat32, F32L,
                           std::conditional_t<kDt == kDtFloat64, F64L, IntLanes<kDt, kBytes>>>>>;

}  // namespace
}  // namespace detail
}  // namespace kernels
}  // namespace hora
