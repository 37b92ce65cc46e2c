// The CUDA implementation of hora::DeviceRuntime (core/base/device_runtime.h): the CUDA runtime
// API for streams, events, copies and memory, and kernels/cuda's batched_scale_copy for packing.
// Built only with HORA_WITH_NCCL (target hora_cuda_kernels); code above reaches it through
// collectives::make_device_runtime, never directly. Stateless; thread-safe.
#pragma once

#include <memory>

#include "core/base/device_runtime.h"

namespace hora {
namespace kernels {
namespace cuda {

// Never fails: a process without a usable device gets a runtime whose device_count() is 0 and
// whose calls return kFailedPrecondition naming the CUDA error.
std::unique_ptr<DeviceRuntime> make_cuda_device_runtime();

}  // namespace cuda
}  // namespace kernels
}  // namespace hora
