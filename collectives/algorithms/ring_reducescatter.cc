// Ring reducescatter: the reduce-scatter phase of the ring allreduce on its own.
//
// Schedule, n ranks, rank r: the input holds n blocks, block k of recv_counts[k] elements
// (zero allowed), each split into segments of segment_bytes. Steps s = 0 .. n-2: send block
// (r - s - 1) to next, receive block (r - s - 2) from prev into a window of scratch slots,
// reduce it with the own input (result = own op received) and send the result on; partial
// results live in a whole-buffer scratch slot (the output holds only block r), and the last
// step writes block r straight into `out`. kAverage: block r is scaled by 1/n at the end.
//
// Determinism: block k is reduced in the fixed ring order x_k, x_{k+1}, ..., ending on rank k
// (same order as ring_allreduce, so reducescatter + allgatherv gives allreduce's bits).
//
// In place (out == in + offset of block r): block r of the input is read only by the last
// step's reduction, which writes the same elements (exact aliasing is allowed by the kernels).
#include <algorithm>

#include "collectives/algorithms/algorithms.h"
#include "collectives/algorithms/ring_common.h"

namespace hora {
namespace collectives {

std::vector<size_t> even_split(size_t count, int parts) {
  std::vector<size_t> counts(parts > 0 ? parts : 0, 0);
  if (parts <= 0) return counts;
  const size_t base = count / parts;
  const size_t extra = count % parts;
  for (int k = 0; k < parts; ++k) counts[k] = base + (static_cast<size_t>(k) < extra ? 1 : 0);
  return counts;
}

Status ring_reducescatter(Communicator& comm, const void* in, void* out,
                          const std::vector<size_t>& recv_counts, DataType dtype, ReduceOp op,
                          const AlgorithmOptions& options) {
  HORA_RETURN_IF_ERROR(check_reduce_op(op, dtype, "ring reducescatter"));
  const int n = comm.size();
  const int r = comm.rank();
  HORA_RETURN_IF_ERROR(
      detail::check_count_per_rank(comm, n, recv_counts.size(), "reducescatter", "recv_counts"));
  const std::vector<size_t> offsets = detail::prefix_offsets(recv_counts);
  const size_t total = offsets[n];
  if (total == 0) return Status::OK();
  const size_t elem = data_type_bytes(dtype);
  if (n == 1) {
    HORA_RETURN_IF_ERROR(detail::copy_if_distinct(comm, in, out, total, dtype));
    return detail::finish(comm, options.deadline);
  }
  ScratchPool local_pool;
  ScratchPool& pool = detail::scratch_pool(options, local_pool);

  detail::ReduceScatterPhase phase;
  phase.in = static_cast<const uint8_t*>(in);
  HORA_ASSIGN_OR_RETURN(phase.work, detail::acquire(comm, pool, 1, total * elem));
  phase.final_out = static_cast<uint8_t*>(out);
  phase.offsets = &offsets;
  phase.counts = &recv_counts;
  phase.dtype = dtype;
  phase.op = op;
  phase.seg_elems = detail::segment_elems(
      comm, options, dtype, *std::max_element(recv_counts.begin(), recv_counts.end()));
  HORA_RETURN_IF_ERROR(detail::ring_reduce_scatter_phase(comm, phase, pool, options));
  if (op == ReduceOp::kAverage && recv_counts[r] > 0) {
    HORA_RETURN_IF_ERROR(detail::scale(comm, out, recv_counts[r], dtype, 1.0 / n));
  }
  return detail::finish(comm, options.deadline);
}

}  // namespace collectives
}  // namespace hora
