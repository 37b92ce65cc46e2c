// Hierarchical allreduce (Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE, NCCL's tree-of-rings idea
// on CPUs): the hosts' ranks first combine over their fast local links, then only one rank
// per lane and host crosses the slow link, each with 1/K of the buffer.
//
// Schedule, K lanes (the fewest ranks on any host), rank with local index j on host h:
//   The buffer of `count` elements is split into K lane blocks, even_split(count, K) (lane
//   block k: offsets[k], counts[k] elements).
//   1. Within the host (SubCommunicator over host h's ranks): ring reducescatter of the whole
//      buffer with recv counts {counts[0], ..., counts[K-1], 0, ...}: local index k < K ends
//      with host h's reduction of lane block k in out + offsets[k]; ranks with k >= K get
//      nothing (a host with more ranks than K).
//   2. Across hosts (SubCommunicator over lane j: local index j of every host, in host
//      order), j < K only: allreduce of lane block j in place, recursive doubling up to
//      kHierarchicalRdMaxBytes, ring above. kAverage: the inner steps sum, and this step
//      scales the block by 1/size once.
//   3. Within the host: ring allgatherv of the lane blocks (same counts as step 1), so every
//      local rank holds every block.
// Bytes out of each host per direction (ring lanes): K lanes x 2 (H - 1) / H x 1/K of the
// buffer = 2 (H - 1) / H of it; a flat ring over n ranks placed host by host sends
// 2 (n - 1) / n of it over each crossing edge: 1 against 1.5 buffers for 2 hosts x 2 ranks.
//
// Determinism: lane block k's final bits are computed by lane k's allreduce (deterministic,
// identical on its members: hosts' partial sums are combined in host order by the fixed
// schedule), from host partial sums whose order of reduction is fixed by each host's ring;
// step 3 copies those bits to every rank of every host. Arrival times never matter.
//
// In place: step 1's output block is the input's own block (ring reducescatter's in-place
// case); steps 2 and 3 work in out.
#include "collectives/algorithms/hierarchical.h"
#include "collectives/algorithms/ring_common.h"
#include "collectives/sub_communicator.h"

namespace hora {
namespace collectives {

namespace detail {

Status check_topology(const Communicator& comm, const Topology& topology, const char* what) {
  if (topology.size() == comm.size() && topology.rank() == comm.rank()) return Status::OK();
  return Status::invalid_argument(
      std::string(what) + " on rank " + std::to_string(comm.rank()) + " of " +
      std::to_string(comm.size()) + ": the topology describes rank " +
      std::to_string(topology.rank()) + " of " + std::to_string(topology.size()));
}

}  // namespace detail

Status hierarchical_allreduce(Communicator& comm, const Topology& topology, const void* in,
                              void* out, size_t count, DataType dtype, ReduceOp op,
                              const AlgorithmOptions& options) {
  HORA_RETURN_IF_ERROR(check_reduce_op(op, dtype, "hierarchical allreduce"));
  HORA_RETURN_IF_ERROR(detail::check_topology(comm, topology, "hierarchical allreduce"));
  if (count == 0) return Status::OK();
  const int n = comm.size();
  if (n == 1) {
    HORA_RETURN_IF_ERROR(detail::copy_if_distinct(comm, in, out, count, dtype));
    return detail::finish(comm, options.deadline);
  }
  if (topology.hosts() == 1) return ring_allreduce(comm, in, out, count, dtype, op, options);

  const int lanes = topology.lanes();
  const int j = topology.local_index();
  const std::vector<size_t> lane_counts = even_split(count, lanes);
  const std::vector<size_t> lane_offsets = detail::prefix_offsets(lane_counts);
  const size_t elem = data_type_bytes(dtype);
  auto* out_bytes = static_cast<uint8_t*>(out);
  const ReduceOp inner = op == ReduceOp::kAverage ? ReduceOp::kSum : op;

  SubCommunicator local(comm, topology.local_members());
  std::vector<size_t> local_counts(static_cast<size_t>(local.size()), 0);
  for (int k = 0; k < lanes; ++k) local_counts[k] = lane_counts[k];
  uint8_t* block = out_bytes + (j < lanes ? lane_offsets[j] : count) * elem;

  // 1. Within the host.
  if (local.size() > 1) {
    HORA_RETURN_IF_ERROR(
        ring_reducescatter(local, in, block, local_counts, dtype, inner, options)
            .with_context(" (hierarchical allreduce: reduce-scatter within the host)"));
  } else {
    HORA_RETURN_IF_ERROR(detail::copy_if_distinct(comm, in, out, count, dtype));
  }
  // 2. Across hosts, lane j.
  if (j < lanes && lane_counts[j] > 0) {
    SubCommunicator lane(comm, topology.lane_members());
    const size_t c = lane_counts[j];
    Status s = c * elem <= kHierarchicalRdMaxBytes
                   ? recursive_doubling_allreduce(lane, block, block, c, dtype, inner, options)
                   : ring_allreduce(lane, block, block, c, dtype, inner, options);
    HORA_RETURN_IF_ERROR(s.with_context(" (hierarchical allreduce: lane " + std::to_string(j) +
                                        " across " + std::to_string(topology.hosts()) + " hosts)"));
    if (op == ReduceOp::kAverage) {
      HORA_RETURN_IF_ERROR(detail::scale(comm, block, c, dtype, 1.0 / n));
    }
  }
  // 3. Within the host.
  if (local.size() > 1) {
    HORA_RETURN_IF_ERROR(ring_allgatherv(local, block, out, local_counts, dtype, options)
                             .with_context(" (hierarchical allreduce: allgather within the host)"));
  }
  return detail::finish(comm, options.deadline);  // the lane's scale, on device buffers
}

}  // namespace collectives
}  // namespace hora
