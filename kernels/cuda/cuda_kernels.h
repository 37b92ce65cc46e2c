// kernels/cuda: the CUDA versions of kernels/kernels.h's reduce, scale and casts, and a
// batched scaled copy of many buffers in one launch (packing small tensors into a fusion
// buffer and unpacking them, Horovod's batched device-to-device copy).
//
// Host-callable C++: this header names no CUDA type (a stream is the opaque Stream below,
// which is cudaStream_t), so code built without nvcc may include it. Built only with
// HORA_WITH_NCCL (CMake target hora_cuda_kernels).
//
// Every call enqueues its work on `stream` (nullptr: the default stream of the calling
// thread's current device) and returns without waiting: the result is there once the stream
// reaches it, and an error that happens while the kernel runs surfaces at the caller's next
// synchronisation, not here. Pointers are device memory of the current device (any memory
// that device may address). `dst` may alias a source exactly; partial overlap is undefined.
// A returned error names the kernel and the CUDA error: kFailedPrecondition when there is no
// usable device or driver, kInvalidArgument for a dtype/op the kernels do not define,
// kInternal for any other CUDA failure at launch. Thread-safe (as the CUDA runtime is).
//
// Semantics are kernels.h's, so results equal the CPU kernels' bit for bit, with one
// exception the hardware imposes: a NaN produced by an add or a multiply (sum, product,
// scale) is the GPU's canonical NaN, not the operand's payload; min and max return the NaN
// operand itself, as on the CPU. float16/bfloat16 are combined in float32 and rounded once.
// nvcc never contracts a * b + c into a fused multiply-add here (--fmad=false).
#pragma once

#include <cstddef>
#include <cstdint>

#include "hora/data_type.h"
#include "hora/reduce_op.h"
#include "hora/status.h"

struct CUstream_st;

namespace hora {
namespace kernels {
namespace cuda {

using Stream = CUstream_st*;  // cudaStream_t

// The number of CUDA devices this process can use; kFailedPrecondition naming the CUDA error
// (e.g. "insufficient driver") when there is none or no driver. Never aborts.
StatusOr<int> device_count();

// dst[i] = a[i] op b[i] for i < count (kernels.h's reduce3).
Status reduce3(void* dst, const void* a, const void* b, size_t count, DataType dtype, ReduceOp op,
               Stream stream);
// dst[i] = dst[i] op src[i].
Status reduce(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op, Stream stream);
// dst[i] = src[i] * factor (kernels.h's scale_copy; factor 1 copies the bytes exactly).
Status scale_copy(void* dst, const void* src, size_t count, DataType dtype, double factor,
                  Stream stream);
// buf[i] *= factor.
Status scale(void* buf, size_t count, DataType dtype, double factor, Stream stream);

// Casts, as kernels.h's: round-to-nearest-even, NaN stays NaN, overflow goes to infinity.
Status cast_f32_to_f16(uint16_t* dst, const float* src, size_t count, Stream stream);
Status cast_f16_to_f32(float* dst, const uint16_t* src, size_t count, Stream stream);
Status cast_f32_to_bf16(uint16_t* dst, const float* src, size_t count, Stream stream);
Status cast_bf16_to_f32(float* dst, const uint16_t* src, size_t count, Stream stream);

// One buffer of a batched copy: `count` elements from src to dst.
struct CopyItem {
  void* dst = nullptr;
  const void* src = nullptr;
  size_t count = 0;
};
// Items per launch of batched_scale_copy: the descriptors travel as the kernel's argument
// (kMaxBatchItems x 24 bytes, inside CUDA's 4 KiB argument limit), so packing needs no
// device-side descriptor buffer and no extra copy before the launch.
inline constexpr size_t kMaxBatchItems = 128;
// For every item, dst[k] = src[k] * factor (scale_copy's rule; factor 1 copies bytes), all
// items of each group of kMaxBatchItems in one launch. Items must not overlap one another.
Status batched_scale_copy(const CopyItem* items, size_t num_items, DataType dtype, double factor,
                          Stream stream);

}  // namespace cuda
}  // namespace kernels
}  // namespace hora
