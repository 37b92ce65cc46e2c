// The integer scale rule shared by the CPU and CUDA kernels (kernels.h): the float64 product
// rounded half away from zero into a long long, saturating at its limits (NaN gives 0). A
// product outside long long's range has no value in llround (x86's libm returns LLONG_MIN,
// the GPU's LLONG_MAX), so an int64 scaled past it must be clamped here for the CPU and the GPU
// to agree bit for bit. Narrower integers are then wrapped to their width by the caller.
#pragma once

#include <math.h>

#if defined(__CUDACC__)
#define HORA_HOST_DEVICE __host__ __device__
#else
#define HORA_HOST_DEVICE
#endif

namespace hora {
namespace kernels {

HORA_HOST_DEVICE inline long long round_scaled(double product) {
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (product != product) return 0;
  if (product >= kTwoTo63) return 9223372036854775807LL;
  if (product < -kTwoTo63) return -9223372036854775807LL - 1;
  return llround(product);
}

}  // namespace kernels
}  // namespace hora

#undef HORA_HOST_DEVICE
