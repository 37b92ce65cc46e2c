#include "kernels/adasum.h"

#include <cstdint>

#include "hora/logging.h"
#include "kernels/cpu/half.h"

namespace hora {
namespace kernels {
namespace {

// Element access per dtype: load reads element i as float64 (for the dot products); C is the
// type the weighted sum is computed in (float64 for float64, float32 otherwise, as the
// framework would compute it), and store writes a C value rounded to the dtype.
template <typename Float>
struct Plain {
  using T = Float;
  using C = Float;
  static double load(const T* p, size_t i) { return p[i]; }
  static C value(const T* p, size_t i) { return p[i]; }
  static void store(T* p, size_t i, C v) { p[i] = v; }
};
using F64 = Plain<double>;
using F32 = Plain<float>;
struct F16 {
  using T = uint16_t;
  using C = float;
  static double load(const T* p, size_t i) { return detail::half_to_float(p[i]); }
  static C value(const T* p, size_t i) { return detail::half_to_float(p[i]); }
  static void store(T* p, size_t i, C v) { p[i] = detail::half_from_float(v); }
};
struct BF16 {
  using T = uint16_t;
  using C = float;
  static double load(const T* p, size_t i) { return detail::bhalf_to_float(p[i]); }
  static C value(const T* p, size_t i) { return detail::bhalf_to_float(p[i]); }
  static void store(T* p, size_t i, C v) { p[i] = detail::bhalf_from_float(v); }
};

// Four partial sums per product (element i goes to lane i % 4), added lane 0 to 3 at the end:
// independent additions the CPU overlaps, in an order fixed by the count alone.
template <typename E>
void dots_of(const void* a_in, const void* b_in, size_t count, AdasumDots* dots) {
  constexpr size_t kLanes = 4;
  const auto* a = static_cast<const typename E::T*>(a_in);
  const auto* b = static_cast<const typename E::T*>(b_in);
  double ab[kLanes] = {}, aa[kLanes] = {}, bb[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    for (size_t l = 0; l < kLanes; ++l) {
      const double x = E::load(a, i + l);
      const double y = E::load(b, i + l);
      ab[l] += x * y;
      aa[l] += x * x;
      bb[l] += y * y;
    }
  }
  for (size_t l = 0; i < count; ++i, ++l) {
    const double x = E::load(a, i);
    const double y = E::load(b, i);
    ab[l] += x * y;
    aa[l] += x * x;
    bb[l] += y * y;
  }
  for (size_t l = 0; l < kLanes; ++l) {
    dots->ab += ab[l];
    dots->aa += aa[l];
    dots->bb += bb[l];
  }
}

template <typename E>
void combine_of(void* out_buf, const void* a_in, const void* b_in, size_t count, double ca,
                double cb) {
  auto* out = static_cast<typename E::T*>(out_buf);
  const auto* a = static_cast<const typename E::T*>(a_in);
  const auto* b = static_cast<const typename E::T*>(b_in);
  const auto wa = static_cast<typename E::C>(ca), wb = static_cast<typename E::C>(cb);
  for (size_t i = 0; i < count; ++i) E::store(out, i, wa * E::value(a, i) + wb * E::value(b, i));
}

// The float32 loops (the common case) are also built for AVX2, picked at load time where the
// CPU has it: each result element and each rank's partial dot products are still computed in
// one fixed order (no FMA: the "avx2" target leaves multiplies and adds separate).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define HORA_ADASUM_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define HORA_ADASUM_CLONES
#endif
HORA_ADASUM_CLONES void dots_f32(const void* a, const void* b, size_t count, AdasumDots* dots) {
  dots_of<F32>(a, b, count, dots);
}
HORA_ADASUM_CLONES void combine_f32(void* out, const void* a, const void* b, size_t count,
                                    double ca, double cb) {
  combine_of<F32>(out, a, b, count, ca, cb);
}

template <typename Fn>
void for_float_dtype(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DataType::kFloat64: fn(F64{}); return;
    case DataType::kFloat32: fn(F32{}); return;
    case DataType::kFloat16: fn(F16{}); return;
    case DataType::kBFloat16: fn(BF16{}); return;
    default: break;
  }
  HORA_CHECK(false) << "adasum kernels take float16, bfloat16, float32 or float64, not "
                    << data_type_name(dtype) << "; the caller must refuse it";
}

}  // namespace

void adasum_dots(const void* a, const void* b, size_t count, DataType dtype, AdasumDots* dots) {
  if (dtype == DataType::kFloat32) return dots_f32(a, b, count, dots);
  for_float_dtype(dtype, [&](auto e) { dots_of<decltype(e)>(a, b, count, dots); });
}

void adasum_coefficients(const AdasumDots& dots, double* ca, double* cb) {
  *ca = dots.aa > 0 ? 1.0 - dots.ab / (2.0 * dots.aa) : 1.0;
  *cb = dots.bb > 0 ? 1.0 - dots.ab / (2.0 * dots.bb) : 1.0;
}

void adasum_combine(void* out, const void* a, const void* b, size_t count, DataType dtype,
                    double ca, double cb) {
  if (dtype == DataType::kFloat32) return combine_f32(out, a, b, count, ca, cb);
  for_float_dtype(dtype, [&](auto e) { combine_of<decltype(e)>(out, a, b, count, ca, cb); });
}

}  // namespace kernels
}  // namespace hora
