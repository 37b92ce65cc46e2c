#include "kernels/cuda/cuda_status.h"

#include <cuda_runtime_api.h>

namespace hora {
namespace kernels {
namespace cuda {

Status cuda_status(int error, const std::string& what) {
  const auto e = static_cast<cudaError_t>(error);
  if (e == cudaSuccess) return Status::OK();
  const std::string text = what + ": CUDA error " + std::to_string(error) + " (" +
                           cudaGetErrorName(e) + "): " + cudaGetErrorString(e);
  switch (e) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorStubLibrary:
    case cudaErrorCallRequiresNewerDriver:
    case cudaErrorDevicesUnavailable:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice: return Status::failed_precondition(text);
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidDevice: return Status::invalid_argument(text);
    default: return Status::internal(text);
  }
}

}  // namespace cuda
}  // namespace kernels
}  // namespace hora
