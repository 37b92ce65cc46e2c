// Ring allgatherv: n - 1 steps around the ring, each block forwarded segment by segment.
//
// Schedule, n ranks, rank r: out holds n blocks in rank order, block k of counts[k] elements
// (zero allowed, blocks may differ). Rank r first copies its input into block r (unless in
// place), then at steps s = 0 .. n-2 sends block (r - s) to next and receives block
// (r - s - 1) from prev straight into out; each segment (segment_bytes) is forwarded at the
// next step as soon as it has landed, so a large block pipelines along the ring instead of
// waiting n - 1 full block transfers. No scratch is needed.
//
// Determinism: a pure copy; every rank ends with the same bytes.
#include <algorithm>
#include <string>

#include "collectives/algorithms/algorithms.h"
#include "collectives/algorithms/ring_common.h"

namespace hora {
namespace collectives {

Status ring_allgatherv(Communicator& comm, const void* in, void* out,
                       const std::vector<size_t>& counts, DataType dtype,
                       const AlgorithmOptions& options) {
  const int n = comm.size();
  const int r = comm.rank();
  HORA_RETURN_IF_ERROR(
      detail::check_count_per_rank(comm, n, counts.size(), "allgatherv", "counts"));
  const std::vector<size_t> offsets = detail::prefix_offsets(counts);
  if (offsets[n] == 0) return Status::OK();
  const size_t elem = data_type_bytes(dtype);
  auto* out_bytes = static_cast<uint8_t*>(out);
  HORA_RETURN_IF_ERROR(
      detail::copy_if_distinct(comm, in, out_bytes + offsets[r] * elem, counts[r], dtype));
  if (n == 1) return detail::finish(comm, options.deadline);
  ScratchPool local_pool;
  ScratchPool& pool = detail::scratch_pool(options, local_pool);
  HORA_RETURN_IF_ERROR(detail::ring_allgather_phase(
      comm, out_bytes, offsets, counts, elem,
      detail::segment_elems(comm, options, dtype, *std::max_element(counts.begin(), counts.end())),
      pool, options));
  return detail::finish(comm, options.deadline);
}

}  // namespace collectives
}  // namespace hora
