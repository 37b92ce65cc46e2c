// Ring allreduce: reduce-scatter, then allgather (Patarasuk & Yuan; gloo's AllreduceRing-
// Chunked; NCCL's ring), bandwidth-optimal for large messages.
//
// Schedule, n ranks, rank r, next = r + 1, prev = r - 1 (mod n):
//   The buffer of `count` elements is split into n blocks, even_split(count, n) (the first
//   count % n blocks one element longer), and each block into segments of seg_elems =
//   segment_bytes / element size elements; one segment is one message.
//   1. Reduce-scatter, steps s = 0 .. n-2: send block (r - s - 1), receive block (r - s - 2)
//      segment by segment into a window of 4 scratch slots and reduce each one with the own
//      input as soon as it lands; the reduced segment is sent on at once (it is part of the
//      next step's block), while the following segments are still in flight, so transfers
//      overlap reductions. After n - 1 steps rank r holds the full reduction of block r.
//   2. kAverage only: rank r scales its block r by 1/n (kernels::scale), once, before it is
//      distributed.
//   3. Allgather, steps s = 0 .. n-2: send block (r - s), receive block (r - s - 1) straight
//      into out, forwarding each segment as soon as it lands.
// Each rank sends and receives 2 (n - 1) / n of the buffer: the link, not the algorithm, is the
// limit for large messages.
//
// Determinism: block k is reduced along the ring in the fixed order x_k, x_{k+1}, ..., x_{k-1}
// (result = own op received at every hop), wherever the data came from in time; the final
// bits of block k are computed once, on rank k, and the allgather copies those bits to every
// rank. So all ranks hold identical bits and a rerun reproduces them.
//
// In place: out == in works because a block is written only when it is received, and the one
// block (r - 1) whose input is sent at step 0 is never received during the reduce-scatter.
#include <string>

#include "collectives/algorithms/algorithms.h"
#include "collectives/algorithms/ring_common.h"

namespace hora {
namespace collectives {

namespace {

Status ring_schedule(Communicator& comm, const void* in, void* out, size_t count, DataType dtype,
                     ReduceOp op, const AlgorithmOptions& options, ScratchPool& pool) {
  const int n = comm.size();

  const std::vector<size_t> counts = even_split(count, n);
  const std::vector<size_t> offsets = detail::prefix_offsets(counts);
  const size_t seg_elems = detail::segment_elems(comm, options, dtype, counts[0]);
  const size_t elem = data_type_bytes(dtype);
  auto* out_bytes = static_cast<uint8_t*>(out);

  detail::ReduceScatterPhase phase;
  phase.in = static_cast<const uint8_t*>(in);
  phase.work = out_bytes;
  phase.offsets = &offsets;
  phase.counts = &counts;
  phase.dtype = dtype;
  phase.op = op;
  phase.seg_elems = seg_elems;
  HORA_RETURN_IF_ERROR(detail::ring_reduce_scatter_phase(comm, phase, pool, options));

  const int r = comm.rank();
  if (op == ReduceOp::kAverage && counts[r] > 0) {
    HORA_RETURN_IF_ERROR(
        detail::scale(comm, out_bytes + offsets[r] * elem, counts[r], dtype, 1.0 / n));
  }
  return detail::ring_allgather_phase(comm, out_bytes, offsets, counts, elem, seg_elems, pool,
                                      options);
}

}  // namespace

Status ring_allreduce(Communicator& comm, const void* in, void* out, size_t count, DataType dtype,
                      ReduceOp op, const AlgorithmOptions& options) {
  return detail::run_allreduce<ring_schedule>(comm, in, out, count, dtype, op, options,
                                              "ring allreduce");
}

}  // namespace collectives
}  // namespace hora
