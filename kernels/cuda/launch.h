// Host-side helpers of the kernels/cuda launchers, in plain C++ (device.cc defines them).
// Internal to kernels/cuda. Thread-safe.
#pragma once

#include "hora/data_type.h"
#include "hora/status.h"

namespace hora {
namespace kernels {
namespace cuda {
namespace detail {

// OK when every non-null pointer is aligned to dtype's element size (a GPU faults on a
// misaligned load); else kInvalidArgument naming `what`, the pointer and the dtype.
Status check_aligned(const char* what, DataType dtype, const void* a, const void* b = nullptr,
                     const void* c = nullptr);
// The outcome of the launch just made: cudaGetLastError() as a Status naming `what`.
Status launch_status(const char* what);

}  // namespace detail
}  // namespace cuda
}  // namespace kernels
}  // namespace hora
