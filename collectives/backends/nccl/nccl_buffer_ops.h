// NcclBufferOps: BufferOps on the GPU for hora's algorithms over an NCCL communicator: the
// CUDA reduce and scale kernels and cudaMemcpyAsync, all on the communicator's stream (so they
// run after the transfers launched before them and before those launched after), and device
// scratch that only grows. One message per block and step (needs_whole_blocks; why:
// nccl_communicator.h, point to point).
//
// Owned by its NcclCommunicator; the communicator's thread only.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

#include "collectives/backends/nccl/nccl_api.h"
#include "collectives/buffer_ops.h"
#include "collectives/scratch_pool.h"

namespace hora {
namespace collectives {
namespace nccl_backend {

class NcclBufferOps final : public BufferOps {
 public:
  // `stream` is on CUDA device `device`, which every call makes current first (the calling
  // thread need not have made it so). `wait_stream` blocks until the stream's work so far is
  // done (the communicator's wait, with its deadline, abort and failure handling).
  NcclBufferOps(NcclApi& api, int device, cudaStream_t stream,
                std::function<Status(Deadline)> wait_stream)
      : api_(api), device_(device), stream_(stream), wait_stream_(std::move(wait_stream)) {}
  ~NcclBufferOps() override;
  NcclBufferOps(const NcclBufferOps&) = delete;
  NcclBufferOps& operator=(const NcclBufferOps&) = delete;

  Status reduce3(void* dst, const void* a, const void* b, size_t count, DataType dtype,
                 ReduceOp op) override;
  Status scale(void* buf, size_t count, DataType dtype, double factor) override;
  Status copy(void* dst, const void* src, size_t bytes) override;
  StatusOr<uint8_t*> scratch(int slot, size_t bytes) override;
  Status wait(Deadline deadline) override { return wait_stream_(deadline); }
  bool needs_whole_blocks() const override;

 private:
  // cudaSetDevice(device_) for this thread.
  Status use_device();

  NcclApi& api_;
  const int device_;
  const cudaStream_t stream_;
  const std::function<Status(Deadline)> wait_stream_;
  void* slots_[ScratchPool::kNumSlots] = {};
  size_t slot_bytes_[ScratchPool::kNumSlots] = {};
};

}  // namespace nccl_backend
}  // namespace collectives
}  // namespace hora
