// hora's own collective algorithms, written once against Communicator's point-to-point calls
// so every backend gets the same schedules, the same bitwise determinism and the same choice
// by message size. One algorithm per .cc file in this folder; each file opens with a block
// comment on its schedule.
//
// Common contract of every function here:
// - Counts are elements of `dtype`. In place when in == out (for reducescatter and
//   allgatherv: when the rank's own block of the full buffer is exactly the other pointer).
//   Any other overlap of in and out is undefined.
// - Returns OK at once for count 0; for size 1 it only copies in -> out (out of place).
// - Reductions refuse sum and average on bool with kInvalidArgument before anything else
//   (check_reduce_op in hora/reduce_op.h; every rank refuses alike). bool min / max /
//   product are logical and / or / and.
// - Determinism: every output element is reduced in an order fixed by the algorithm and the
//   rank count, never by arrival time, so every rank holds bitwise identical results and a
//   repeated run gives the same bits.
// - kAverage: the kernels treat it as kSum; the algorithm multiplies the reduced result by
//   1/size with kernels::scale before it distributes it, so the caller gets the average and
//   must NOT scale again.
// - Scratch comes from options.scratch, which only grows: after warm-up at a size, a call
//   allocates no data-sized memory, only the Communicator's Request objects and O(ranks)
//   bookkeeping (block offsets). Without a pool a call uses a local one (allocates; fine for
//   tests and one-off calls).
// - After an error the call returns at once; requests still in flight are dropped. The caller
//   should abort() the communicator before freeing buffers a backend might still write.
// - Every wait uses options.deadline. A peer that fails gives the Communicator's error
//   (kRemote / kTimeout naming the peer), with the algorithm's context appended.
// - Every rank must call the same algorithm with the same count, dtype, op, root, segment
//   size and tag; the message tag is options.tag.
// - Memory: host buffers, unless comm.buffer_ops() is set (the nccl backend's GPU buffers);
//   then every reduce, scale, copy and scratch request runs through it (buffer_access.h), a
//   block moves as one message per step when it needs whole blocks, and the call waits for
//   that device work before it returns.
// Thread-safety: one call at a time per Communicator (its own contract).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/scratch_pool.h"
#include "core/base/deadline.h"
#include "hora/data_type.h"
#include "hora/reduce_op.h"
#include "hora/status.h"

namespace hora {
namespace collectives {

class Topology;

struct AlgorithmOptions {
  // By when every wait must return.
  Deadline deadline = Deadline::after(std::chrono::seconds(300));
  // Largest message of the pipelined algorithms (ring, tree, broadcast, allgatherv). Tests
  // set it tiny to reach the many-segment paths. Rounded down to whole elements, at least 1.
  // 512 KiB from a sweep of ring allreduce busbw at 2 ranks, 16-256 MiB (2026-12-02): over
  // builtin TCP 128 KiB / 512 KiB / 2 MiB / 8 MiB gave 1.2 / 1.15 / 1.0 / 0.95 GB/s, over Gloo's
  // pairs 128 KiB / 512 KiB / 2 MiB gave 0.5-0.6 / 0.8-0.96 / 0.73-0.88 GB/s: the one size
  // near the best on every transport (larger segments lose the copy/reduce overlap).
  size_t segment_bytes = 512 * 1024;
  // Reusable scratch; null means a pool local to the call.
  ScratchPool* scratch = nullptr;
  // Message tag of every send and receive of the call.
  uint32_t tag = 0x686f7261;  // "hora"
  // The hosts of the communicator's ranks and their links (topology.h), for the hierarchical
  // algorithms and the selector; null means unknown (flat algorithms only). Borrowed.
  const Topology* topology = nullptr;
};

// Allreduce: out[i] = op over ranks of in[i].
// Ring (bandwidth-optimal, large messages): ring_allreduce.cc.
Status ring_allreduce(Communicator& comm, const void* in, void* out, size_t count, DataType dtype,
                      ReduceOp op, const AlgorithmOptions& options);
// Pipelined binary tree (mid sizes, many ranks): tree_allreduce.cc.
Status tree_allreduce(Communicator& comm, const void* in, void* out, size_t count, DataType dtype,
                      ReduceOp op, const AlgorithmOptions& options);
// Recursive doubling with fold-in/out for any rank count (small messages).
Status recursive_doubling_allreduce(Communicator& comm, const void* in, void* out, size_t count,
                                    DataType dtype, ReduceOp op, const AlgorithmOptions& options);

// Adasum allreduce (adasum.cc; the rule in kernels/adasum.h) of a buffer of tensors laid out
// back to back, counts[t] elements each: each tensor is combined with its own dot products.
// float16, bfloat16, float32 and float64; other dtypes are refused (kInvalidArgument), and
// device buffers (comm.buffer_ops()) with kUnimplemented: the engine stages them through host
// memory. The single-count form is one tensor.
Status adasum_allreduce(Communicator& comm, const void* in, void* out,
                        const std::vector<size_t>& counts, DataType dtype,
                        const AlgorithmOptions& options);
Status adasum_allreduce(Communicator& comm, const void* in, void* out, size_t count, DataType dtype,
                        const AlgorithmOptions& options);

// Broadcast of root's `in` into every rank's `out` (root copies in -> out when they differ;
// non-roots ignore `in`). Pipelined chain: broadcast.cc.
Status pipelined_broadcast(Communicator& comm, const void* in, void* out, size_t count,
                           DataType dtype, int root, const AlgorithmOptions& options);

// Rank r contributes counts[r] elements (zero allowed); out holds sum(counts) elements in
// rank order on every rank. In place when in == out + offset of block r.
Status ring_allgatherv(Communicator& comm, const void* in, void* out,
                       const std::vector<size_t>& counts, DataType dtype,
                       const AlgorithmOptions& options);

// `in` holds sum(recv_counts) elements; rank r gets the reduction of block r (recv_counts[r]
// elements) in `out`. In place when out == in + offset of block r.
Status ring_reducescatter(Communicator& comm, const void* in, void* out,
                          const std::vector<size_t>& recv_counts, DataType dtype, ReduceOp op,
                          const AlgorithmOptions& options);
// The default split of `count` elements over `parts` ranks: the first count % parts ranks get
// one element more than the others.
std::vector<size_t> even_split(size_t count, int parts);

// send_counts[p] elements of `in` (peer order) go to p; recv_counts[p] from p land in `out`
// (peer order). Pairwise exchange: alltoallv.cc. Out of place only (in and out disjoint).
Status pairwise_alltoallv(Communicator& comm, const void* in,
                          const std::vector<size_t>& send_counts, void* out,
                          const std::vector<size_t>& recv_counts, DataType dtype,
                          const AlgorithmOptions& options);

// Returns once every rank has entered. Dissemination: barrier.cc.
Status dissemination_barrier(Communicator& comm, const AlgorithmOptions& options);

}  // namespace collectives
}  // namespace hora
