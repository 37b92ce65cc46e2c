#include "collectives/backends/nccl/nccl_buffer_ops.h"

#include <cstdint>
#include <string>

#include "kernels/cuda/cuda_status.h"

namespace hora {
namespace collectives {
namespace nccl_backend {

NcclBufferOps::~NcclBufferOps() {
  for (void* p : slots_)
    if (p != nullptr) api_.free_device(p);
}

Status NcclBufferOps::use_device() {
  return kernels::cuda::cuda_status(api_.set_device(device_),
                                    "nccl: cudaSetDevice(" + std::to_string(device_) + ")");
}

Status NcclBufferOps::reduce3(void* dst, const void* a, const void* b, size_t count, DataType dtype,
                              ReduceOp op) {
  HORA_RETURN_IF_ERROR(use_device());
  return api_.reduce3(dst, a, b, count, dtype, op, stream_);
}

Status NcclBufferOps::scale(void* buf, size_t count, DataType dtype, double factor) {
  HORA_RETURN_IF_ERROR(use_device());
  return api_.scale(buf, count, dtype, factor, stream_);
}

Status NcclBufferOps::copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return Status::OK();
  HORA_RETURN_IF_ERROR(use_device());
  return kernels::cuda::cuda_status(api_.memcpy_async(dst, src, bytes, stream_),
                                    "nccl: cudaMemcpyAsync of " + std::to_string(bytes) + " bytes");
}

StatusOr<uint8_t*> NcclBufferOps::scratch(int slot, size_t bytes) {
  if (slot < 0 || slot >= ScratchPool::kNumSlots)
    return Status::internal("nccl: scratch slot " + std::to_string(slot) + " out of range");
  if (bytes > slot_bytes_[slot] || slots_[slot] == nullptr) {
    HORA_RETURN_IF_ERROR(use_device());
    if (slots_[slot] != nullptr) {
      // The stream may still read the old slot: let it finish before the memory goes.
      api_.free_device(slots_[slot]);  // cudaFree synchronises the device
      slots_[slot] = nullptr;
      slot_bytes_[slot] = 0;
    }
    const size_t grown = bytes < 256 ? 256 : bytes;
    HORA_RETURN_IF_ERROR(kernels::cuda::cuda_status(
        api_.malloc_device(&slots_[slot], grown),
        "nccl: cudaMalloc of " + std::to_string(grown) + " scratch bytes"));
    slot_bytes_[slot] = grown;
  }
  return static_cast<uint8_t*>(slots_[slot]);
}

bool NcclBufferOps::needs_whole_blocks() const { return true; }

}  // namespace nccl_backend
}  // namespace collectives
}  // namespace hora
