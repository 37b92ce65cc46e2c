#include "kernels/adasum.h"

#include <cstdint>

#include "hora/logging.h"
#include "kernels/cpu/half.h"

namespace hora {
namespace kernels {
namespace {

// Element access in float64 per dtype: Load reads element i, Store writes a value rounded to
// the dtype once (float16 / bfloat16 through float32, which holds every such value exactly
// after rounding float64 -> float32 -> half; the double rounding is a fixed, documented rule).
struct F64 {
  using T = double;
  static double load(const T* p, size_t i) { return p[i]; }
  static void store(T* p, size_t i, double v) { p[i] = v; }
};
struct F32 {
  using T = float;
  static double load(const T* p, size_t i) { return p[i]; }
  static void store(T* p, size_t i, double v) { p[i] = static_cast<float>(v); }
};
struct F16 {
  using T = uint16_t;
  static double load(const T* p, size_t i) { return detail::half_to_float(p[i]); }
  static void store(T* p, size_t i, double v) {
    p[i] = detail::half_from_float(static_cast<float>(v));
  }
};
struct BF16 {
  using T = uint16_t;
  static double load(const T* p, size_t i) { return detail::bhalf_to_float(p[i]); }
  static void store(T* p, size_t i, double v) {
    p[i] = detail::bhalf_from_float(static_cast<float>(v));
  }
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
  for (size_t i = 0; i < count; ++i) E::store(out, i, ca * E::load(a, i) + cb * E::load(b, i));
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
  for_float_dtype(dtype, [&](auto e) { dots_of<decltype(e)>(a, b, count, dots); });
}

void adasum_coefficients(const AdasumDots& dots, double* ca, double* cb) {
  *ca = dots.aa > 0 ? 1.0 - dots.ab / (2.0 * dots.aa) : 1.0;
  *cb = dots.bb > 0 ? 1.0 - dots.ab / (2.0 * dots.bb) : 1.0;
}

void adasum_combine(void* out, const void* a, const void* b, size_t count, DataType dtype,
                    double ca, double cb) {
  for_float_dtype(dtype, [&](auto e) { combine_of<decltype(e)>(out, a, b, count, ca, cb); });
}

}  // namespace kernels
}  // namespace hora
