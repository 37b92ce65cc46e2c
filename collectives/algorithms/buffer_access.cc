#include "collectives/algorithms/buffer_access.h"

#include <cstring>

#include "kernels/kernels.h"

namespace hora {
namespace collectives {
namespace detail {

Status reduce3(Communicator& comm, void* dst, const void* a, const void* b, size_t count,
               DataType dtype, ReduceOp op) {
  if (BufferOps* ops = comm.buffer_ops()) return ops->reduce3(dst, a, b, count, dtype, op);
  kernels::reduce3(dst, a, b, count, dtype, op);
  return Status::OK();
}

Status scale(Communicator& comm, void* buf, size_t count, DataType dtype, double factor) {
  if (BufferOps* ops = comm.buffer_ops()) return ops->scale(buf, count, dtype, factor);
  kernels::scale(buf, count, dtype, factor);
  return Status::OK();
}

Status copy_if_distinct(Communicator& comm, const void* in, void* out, size_t count,
                        DataType dtype) {
  if (in == out || count == 0) return Status::OK();
  const size_t bytes = count * data_type_bytes(dtype);
  if (BufferOps* ops = comm.buffer_ops()) return ops->copy(out, in, bytes);
  std::memmove(out, in, bytes);
  return Status::OK();
}

StatusOr<uint8_t*> acquire(Communicator& comm, ScratchPool& pool, int slot, size_t bytes) {
  if (BufferOps* ops = comm.buffer_ops()) return ops->scratch(slot, bytes);
  return pool.acquire(slot, bytes);
}

Status finish(Communicator& comm, Deadline deadline) {
  BufferOps* ops = comm.buffer_ops();
  return ops == nullptr ? Status::OK() : ops->wait(deadline);
}

size_t segment_elems(Communicator& comm, const AlgorithmOptions& options, DataType dtype,
                     size_t largest_block) {
  BufferOps* ops = comm.buffer_ops();
  if (ops != nullptr && ops->needs_whole_blocks()) return largest_block == 0 ? 1 : largest_block;
  const size_t elems = options.segment_bytes / data_type_bytes(dtype);
  return elems == 0 ? 1 : elems;
}

Status allreduce_trivial_cases(Communicator& comm, const void* in, void* out, size_t count,
                               DataType dtype, ReduceOp op, const AlgorithmOptions& options,
                               const char* algorithm, bool* done) {
  *done = true;
  HORA_RETURN_IF_ERROR(check_reduce_op(op, dtype, algorithm));
  if (count == 0) return Status::OK();
  if (comm.size() == 1) {
    HORA_RETURN_IF_ERROR(copy_if_distinct(comm, in, out, count, dtype));
    return finish(comm, options.deadline);
  }
  *done = false;
  return Status::OK();
}

}  // namespace detail
}  // namespace collectives
}  // namespace hora
