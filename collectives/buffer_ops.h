// BufferOps: the memory operations hora's own algorithms (collectives/algorithms/) apply to
// the buffers they are given -- reduce, scale, copy -- and the scratch memory they receive
// into. For host buffers these are kernels/ (kernels.h), memcpy and the caller's ScratchPool;
// a backend whose buffers live elsewhere (nccl: GPU memory) supplies its own through
// Communicator::buffer_ops(), so the same schedules run on device buffers with device kernels.
//
// Ownership: the communicator that returns it. Thread-safety: that communicator's thread only
// (the operations are ordered with its transfers: the nccl one enqueues on its stream).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/base/deadline.h"
#include "hora/data_type.h"
#include "hora/reduce_op.h"
#include "hora/status.h"

namespace hora {
namespace collectives {

class BufferOps {
 public:
  virtual ~BufferOps() = default;

  // dst[i] = a[i] op b[i] (kernels::reduce3's semantics; dst may alias a or b exactly).
  virtual Status reduce3(void* dst, const void* a, const void* b, size_t count, DataType dtype,
                         ReduceOp op) = 0;
  // buf[i] *= factor (kernels::scale's rule).
  virtual Status scale(void* buf, size_t count, DataType dtype, double factor) = 0;
  // Copies `bytes` from src to dst; the ranges must not overlap unless equal.
  virtual Status copy(void* dst, const void* src, size_t bytes) = 0;
  // At least `bytes` of scratch for `slot` (0 <= slot < ScratchPool::kNumSlots) in the same
  // memory as the buffers; valid until the next call for the slot with a larger size. Grows
  // only, like ScratchPool.
  virtual StatusOr<uint8_t*> scratch(int slot, size_t bytes) = 0;
  // Blocks until every operation issued through this object so far has completed, `deadline`
  // passes (kTimeout) or the communicator fails (its error). The operations above are
  // asynchronous (enqueued in order with the communicator's transfers); the algorithms call
  // this once before they return.
  virtual Status wait(Deadline deadline) = 0;
  // True when the algorithms must move each block as one message per step rather than as a
  // pipeline of segments (AlgorithmOptions::segment_bytes is then ignored): a transport that
  // runs each launch to completion in posting order (NCCL) could deadlock on segments sent
  // ahead of the step that receives them.
  virtual bool needs_whole_blocks() const = 0;
};

}  // namespace collectives
}  // namespace hora
