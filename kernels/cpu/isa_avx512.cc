// The AVX-512 kernel table (512-bit registers), built with -mavx512f -mavx512bw
// -mavx512vl -mf16c -mfma. Only called after dispatch.cc has checked that the CPU has
// AVX-512 F, BW and VL plus AVX2, FMA and F16C.
//
// Integer and float add/mul use GCC vector types (lanes.h; 8-bit ops need BW, int64
// multiply is emulated without DQ); float min/max and the 16-bit float conversions use
// intrinsics, with mask registers for the NaN fix-up.
// GCC 12 reports -Wmaybe-uninitialized inside its own _mm512_undefined_*() (GCC bug
// 105593, fixed in GCC 13) when the unmasked AVX-512 intrinsics are inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/loops.h"

namespace hora {
namespace kernels {
namespace detail {
namespace {

constexpr size_t kBytes = 64;
using F32Reg = RegT<float, 16>;
using F64Reg = RegT<double, 8>;

// vminps/vmaxps return the second operand when either is NaN; the masked move puts a's
// NaN back.
struct F32Lanes : VecLanes<float, kBytes> {
  static F32Reg min(F32Reg a, F32Reg b) {
    const __m512 x = (__m512)a;
    return (F32Reg)_mm512_mask_mov_ps(_mm512_min_ps(x, (__m512)b),
                                      _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
  }
  static F32Reg max(F32Reg a, F32Reg b) {
    const __m512 x = (__m512)a;
    return (F32Reg)_mm512_mask_mov_ps(_mm512_max_ps(x, (__m512)b),
                                      _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
  }
};

struct F64Lanes : VecLanes<double, kBytes> {
  static F64Reg min(F64Reg a, F64Reg b) {
    const __m512d x = (__m512d)a;
    return (F64Reg)_mm512_mask_mov_pd(_mm512_min_pd(x, (__m512d)b),
                                      _mm512_cmp_pd_mask(x, x, _CMP_UNORD_Q), x);
  }
  static F64Reg max(F64Reg a, F64Reg b) {
    const __m512d x = (__m512d)a;
    return (F64Reg)_mm512_mask_mov_pd(_mm512_max_pd(x, (__m512d)b),
                                      _mm512_cmp_pd_mask(x, x, _CMP_UNORD_Q), x);
  }
};

// 16 float16 (32 bytes) <-> 16 float32, round-to-nearest-even.
struct F16Lanes : F32Lanes {
  static F32Reg load(const char* p) {
    return (F32Reg)_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static void store(char* p, F32Reg r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtps_ph((__m512)r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
};

// 16 bfloat16 <-> 16 float32: widen by a 16-bit shift; narrow rounding to nearest even in
// integer arithmetic (add 0x7fff plus the kept lsb), NaN quieted as in half.h.
struct BF16Lanes : F32Lanes {
  static F32Reg load(const char* p) {
    const __m512i wide =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return (F32Reg)_mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
  }
  static void store(char* p, F32Reg r) {
    const __m512i x = _mm512_castps_si512((__m512)r);
    const __m512i high = _mm512_srli_epi32(x, 16);
    const __m512i lsb = _mm512_and_si512(high, _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), lsb), 16);
    const __m512i quiet = _mm512_or_si512(high, _mm512_set1_epi32(0x40));
    const __mmask16 is_nan = _mm512_cmp_ps_mask((__m512)r, (__m512)r, _CMP_UNORD_Q);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(is_nan, rounded, quiet)));
  }
};

struct Avx512Policy {
  template <int kDt>
  using Lanes = PickLanes<kDt, kBytes, F16Lanes, BF16Lanes, F32Lanes, F64Lanes>;
};

}  // namespace

const KernelTable& avx512_table() {
  static const KernelTable table = make_table<Avx512Policy>();
  return table;
}

}  // namespace detail
}  // namespace kernels
}  // namespace hora
