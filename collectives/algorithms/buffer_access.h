// The memory operations of hora's algorithms, on host buffers or, through the communicator's
// BufferOps (buffer_ops.h), on a backend's device buffers: every reduce, scale, copy and
// scratch request of collectives/algorithms/ and of run_allreduce goes through these, so the
// schedules are written once for both (hora-bench's native column uses them too). Not a
// public interface. Host paths never fail; device paths return the backend's error (a failed
// launch). The communicator's thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/algorithms/algorithms.h"
#include "collectives/buffer_ops.h"

namespace hora {
namespace collectives {
namespace detail {

// dst[i] = a[i] op b[i] (kernels::reduce3 on the host).
Status reduce3(Communicator& comm, void* dst, const void* a, const void* b, size_t count,
               DataType dtype, ReduceOp op);
// buf[i] *= factor (kernels::scale on the host).
Status scale(Communicator& comm, void* buf, size_t count, DataType dtype, double factor);
// Copies count elements in -> out unless they are the same pointer (memmove on the host).
Status copy_if_distinct(Communicator& comm, const void* in, void* out, size_t count,
                        DataType dtype);
// Scratch of `bytes` for `slot`: pool.acquire on the host, the backend's scratch otherwise.
StatusOr<uint8_t*> acquire(Communicator& comm, ScratchPool& pool, int slot, size_t bytes);
// Waits until the device work issued through the helpers above has completed (OK at once for
// host buffers). Every algorithm calls it before it returns OK, so its caller may read the
// output as soon as it returns, as with host buffers.
Status finish(Communicator& comm, Deadline deadline);
// Elements per segment: options.segment_bytes in whole elements (at least 1), or
// `largest_block` (at least 1) when the backend needs whole blocks (BufferOps).
size_t segment_elems(Communicator& comm, const AlgorithmOptions& options, DataType dtype,
                     size_t largest_block);
// The opening every allreduce algorithm shares: checks that `op` applies to `dtype` (the
// error names `algorithm`), then completes the calls with nothing to exchange: count == 0, and
// one rank (out = in, then finish). Sets *done when the call is complete, and the algorithm
// returns OK; otherwise it runs its schedule.
Status allreduce_trivial_cases(Communicator& comm, const void* in, void* out, size_t count,
                               DataType dtype, ReduceOp op, const AlgorithmOptions& options,
                               const char* algorithm, bool* done);
// The call's scratch: options.scratch, or `local` when the caller gave none.
inline ScratchPool& scratch_pool(const AlgorithmOptions& options, ScratchPool& local) {
  return options.scratch != nullptr ? *options.scratch : local;
}
// An allreduce algorithm's schedule: the exchange itself, once there is one (count > 0, two or
// more ranks), with the call's scratch.
using AllreduceSchedule = Status (*)(Communicator& comm, const void* in, void* out, size_t count,
                                     DataType dtype, ReduceOp op, const AlgorithmOptions& options,
                                     ScratchPool& pool);
// An allreduce algorithm: the opening they share (allreduce_trivial_cases, whose errors name
// `algorithm`), then `Schedule` with the call's scratch (scratch_pool), then finish().
template <AllreduceSchedule Schedule>
Status run_allreduce(Communicator& comm, const void* in, void* out, size_t count, DataType dtype,
                     ReduceOp op, const AlgorithmOptions& options, const char* algorithm) {
  bool done = false;
  HORA_RETURN_IF_ERROR(
      allreduce_trivial_cases(comm, in, out, count, dtype, op, options, algorithm, &done));
  if (done) return Status::OK();
  ScratchPool local_pool;
  HORA_RETURN_IF_ERROR(
      Schedule(comm, in, out, count, dtype, op, options, scratch_pool(options, local_pool)));
  return finish(comm, options.deadline);
}

}  // namespace detail
}  // namespace collectives
}  // namespace hora
