// cuda_status: a CUDA runtime error as a hora Status. Takes the error as a plain int
// (cudaError_t's value) so that this header stays free of CUDA types; used by kernels/cuda and
// by the NCCL backend, the only code that calls CUDA. Pure functions; thread-safe.
#pragma once

#include <string>

#include "hora/status.h"

namespace hora {
namespace kernels {
namespace cuda {

// OK for cudaSuccess. Otherwise "<what>: CUDA error <n> (<name>): <description>" with code
// kFailedPrecondition when the process has no usable device or driver (no device, an
// insufficient driver, no kernel image for this GPU), kInvalidArgument for an invalid value,
// pointer or device ordinal, and kInternal for the rest.
Status cuda_status(int error, const std::string& what);

}  // namespace cuda
}  // namespace kernels
}  // namespace hora
