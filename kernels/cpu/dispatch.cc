// ISA selection: cpuid once per process, then one KernelTable for every call.
#include <atomic>

#if defined(HORA_KERNELS_X86)
#include <cpuid.h>
#endif

#include "core/base/name_table.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/kernels.h"

namespace hora {
namespace kernels {

namespace detail {

// kernel_table.h repeats these values as plain ints (it must not include hora headers).
static_assert(kDtUint8 == static_cast<int>(DataType::kUint8));
static_assert(kDtInt8 == static_cast<int>(DataType::kInt8));
static_assert(kDtInt32 == static_cast<int>(DataType::kInt32));
static_assert(kDtInt64 == static_cast<int>(DataType::kInt64));
static_assert(kDtFloat16 == static_cast<int>(DataType::kFloat16));
static_assert(kDtBFloat16 == static_cast<int>(DataType::kBFloat16));
static_assert(kDtFloat32 == static_cast<int>(DataType::kFloat32));
static_assert(kDtFloat64 == static_cast<int>(DataType::kFloat64));
static_assert(kDtInt16 == static_cast<int>(DataType::kInt16));
static_assert(kDtUint16 == static_cast<int>(DataType::kUint16));
static_assert(kDtBool == static_cast<int>(DataType::kBool));
static_assert(kNumDt == kNumDataTypes);
static_assert(kOpSum == static_cast<int>(ReduceOp::kSum));
static_assert(kOpAverage == static_cast<int>(ReduceOp::kAverage));
static_assert(kOpMin == static_cast<int>(ReduceOp::kMin));
static_assert(kOpMax == static_cast<int>(ReduceOp::kMax));
static_assert(kOpProduct == static_cast<int>(ReduceOp::kProduct));
static_assert(kNumOp == kNumElementwiseReduceOps);

namespace {

// -1 until the first kernel call or select_isa; then an Isa value.
std::atomic<int> g_isa{-1};

#if defined(HORA_KERNELS_X86)
// CPUID.1:ECX.F16C (clang 14's __builtin_cpu_supports does not know "f16c"). F16C uses the
// AVX register state, which the "avx2" check below already requires the OS to enable.
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}
#endif

bool cpu_has(Isa isa) {
#if defined(HORA_KERNELS_X86)
  __builtin_cpu_init();
  const bool avx2 =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2: return avx2;
    case Isa::kAvx512:
      return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
  }
  return false;
#else
  return isa == Isa::kScalar;
#endif
}

}  // namespace

const KernelTable& active_table() {
#if defined(HORA_KERNELS_X86)
  switch (current_isa()) {
    case Isa::kAvx512: return avx512_table();
    case Isa::kAvx2: return avx2_table();
    case Isa::kScalar: break;
  }
#endif
  return scalar_table();
}

}  // namespace detail

namespace {

// Indexed by the Isa value.
constexpr const char* kIsaNames[] = {"scalar", "avx2", "avx512"};
static_assert(std::size(kIsaNames) == static_cast<size_t>(Isa::kAvx512) + 1);

}  // namespace

const char* isa_name(Isa isa) { return name_of(kIsaNames, isa); }

Isa best_isa() {
  static const Isa best = detail::cpu_has(Isa::kAvx512) ? Isa::kAvx512
                          : detail::cpu_has(Isa::kAvx2) ? Isa::kAvx2
                                                        : Isa::kScalar;
  return best;
}

bool isa_supported(Isa isa) { return detail::cpu_has(isa); }

bool select_isa(Isa isa) {
  if (!isa_supported(isa)) return false;
  detail::g_isa.store(static_cast<int>(isa), std::memory_order_release);
  return true;
}

Isa current_isa() {
  int value = detail::g_isa.load(std::memory_order_acquire);
  if (value < 0) {
    int expected = -1;
    detail::g_isa.compare_exchange_strong(expected, static_cast<int>(best_isa()),
                                          std::memory_order_acq_rel);
    value = detail::g_isa.load(std::memory_order_acquire);
  }
  return static_cast<Isa>(value);
}

}  // namespace kernels
}  // namespace hora
