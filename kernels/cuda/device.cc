// device_count and the launchers' host-side checks (launch.h).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/launch.h"

namespace hora {
namespace kernels {
namespace cuda {

StatusOr<int> device_count() {
  int count = 0;
  HORA_RETURN_IF_ERROR(cuda_status(cudaGetDeviceCount(&count), "cudaGetDeviceCount"));
  if (count == 0)
    return Status::failed_precondition("cudaGetDeviceCount: the driver reports no CUDA device");
  return count;
}

namespace detail {

Status check_aligned(const char* what, DataType dtype, const void* a, const void* b,
                     const void* c) {
  const uintptr_t align = data_type_bytes(dtype);
  for (const void* p : {a, b, c}) {
    if (p != nullptr && reinterpret_cast<uintptr_t>(p) % align != 0) {
      char text[32];
      std::snprintf(text, sizeof text, "%p", p);
      return Status::invalid_argument(std::string(what) + ": pointer " + text +
                                      " is not aligned to a " + data_type_name(dtype) +
                                      " element (" + std::to_string(align) + " bytes)");
    }
  }
  return Status::OK();
}

Status launch_status(const char* what) { return cuda_status(cudaGetLastError(), what); }

}  // namespace detail
}  // namespace cuda
}  // namespace kernels
}  // namespace hora
