// The AVX2 kernel table (256-bit registers), built with -mavx2 -mfma -mf16c. Only called
// after dispatch.cc has checked that the CPU has AVX2, FMA and F16C.
//
// Integer and float add/mul use GCC vector types (lanes.h), which compile to vpadd*/vpmull*/
// vaddps/vmulps here; float min/max and the 16-bit float conversions use intrinsics.
#include <immintrin.h>

#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/loops.h"

namespace hora {
namespace kernels {
namespace detail {
namespace {

constexpr size_t kBytes = 32;
using F32Reg = RegT<float, 8>;
using F64Reg = RegT<double, 4>;

// vminps/vmaxps return the second operand when either is NaN; the blend puts a's NaN back.
struct F32Lanes : VecLanes<float, kBytes> {
  static F32Reg min(F32Reg a, F32Reg b) {
    const __m256 m = _mm256_min_ps((__m256)a, (__m256)b);
    return (F32Reg)_mm256_blendv_ps(m, (__m256)a,
                                    _mm256_cmp_ps((__m256)a, (__m256)a, _CMP_UNORD_Q));
  }
  static F32Reg max(F32Reg a, F32Reg b) {
    const __m256 m = _mm256_max_ps((__m256)a, (__m256)b);
    return (F32Reg)_mm256_blendv_ps(m, (__m256)a,
                                    _mm256_cmp_ps((__m256)a, (__m256)a, _CMP_UNORD_Q));
  }
};

struct F64Lanes : VecLanes<double, kBytes> {
  static F64Reg min(F64Reg a, F64Reg b) {
    const __m256d m = _mm256_min_pd((__m256d)a, (__m256d)b);
    return (F64Reg)_mm256_blendv_pd(m, (__m256d)a,
                                    _mm256_cmp_pd((__m256d)a, (__m256d)a, _CMP_UNORD_Q));
  }
  static F64Reg max(F64Reg a, F64Reg b) {
    const __m256d m = _mm256_max_pd((__m256d)a, (__m256d)b);
    return (F64Reg)_mm256_blendv_pd(m, (__m256d)a,
                                    _mm256_cmp_pd((__m256d)a, (__m256d)a, _CMP_UNORD_Q));
  }
};

// 8 float16 (16 bytes) <-> 8 float32 with F16C, round-to-nearest-even.
struct F16Lanes : F32Lanes {
  static F32Reg load(const char* p) {
    return (F32Reg)_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static void store(char* p, F32Reg r) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm256_cvtps_ph((__m256)r, _MM_FROUND_TO_NEAREST_INT));
  }
};

// 8 bfloat16 <-> 8 float32: widen by a 16-bit shift; narrow rounding to nearest even in
// integer arithmetic (add 0x7fff plus the kept lsb), NaN quieted as in half.h.
struct BF16Lanes : F32Lanes {
  static F32Reg load(const char* p) {
    const __m256i wide =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return (F32Reg)_mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  static void store(char* p, F32Reg r) {
    const __m256i x = _mm256_castps_si256((__m256)r);
    const __m256i high = _mm256_srli_epi32(x, 16);
    const __m256i lsb = _mm256_and_si256(high, _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb), 16);
    const __m256i quiet = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
    const __m256 is_nan = _mm256_cmp_ps((__m256)r, (__m256)r, _CMP_UNORD_Q);
    const __m256i out = _mm256_blendv_epi8(rounded, quiet, _mm256_castps_si256(is_nan));
    // packus works per 128-bit half: qwords {o0-3, o0-3, o4-7, o4-7}; keep qwords 0 and 2.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(out, out), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
  }
};

struct Avx2Policy {
  template <int kDt>
  using Lanes = PickLanes<kDt, kBytes, F16Lanes, BF16Lanes, F32Lanes, F64Lanes>;
};

}  // namespace

const KernelTable& avx2_table() {
  static const KernelTable table = make_table<Avx2Policy>();
  return table;
}

}  // namespace detail
}  // namespace kernels
}  // namespace hora
