// Hierarchical allgatherv: each host's data crosses to every other host once, split over the
// K lanes, instead of once per ring edge.
//
// Schedule, K lanes, rank with local index j on host h; host g's data is the blocks of its
// ranks in ascending rank order (host_counts[g], host_total[g] elements), split into K parts
// even_split(host_total[g], K) (part k of host g: part_offsets[g][k], parts[g][k] elements):
//   1. Within the host: ring allgatherv of the host's blocks into `stage` (scratch slot 2),
//      so every local rank holds host h's data.
//   2. Across hosts, lane j (j < K): ring allgatherv of part j of every host's data into
//      `lane_buf` (slot 3), in host order.
//   3. Within the host: ring allgatherv of the lanes' buffers (local index k < K contributes
//      lane k's, others nothing) into `all` (slot 2 again: the stage is no longer needed),
//      laid out lane by lane, host by host.
//   4. Every rank copies each (lane k, host g) piece of `all` to its ranks' places in out.
// Ranks may sit on hosts in any order (the unpacking follows the topology), and blocks may be
// empty.
//
// Determinism: a pure copy; every rank ends with the same bytes.
//
// In place (in == out + offset of this rank's block): `in` is read only in step 1, into the
// stage; out is written only in step 4.
#include <string>

#include "collectives/algorithms/hierarchical.h"
#include "collectives/algorithms/ring_common.h"
#include "collectives/sub_communicator.h"

namespace hora {
namespace collectives {
namespace {

// Copies host g's data elements [first, first + count) (its ranks' blocks, ascending) from
// `src` to their places in out.
Status unpack_piece(Communicator& comm, const Topology& topology, int host, size_t first,
                    size_t count, const uint8_t* src, uint8_t* out,
                    const std::vector<size_t>& counts, const std::vector<size_t>& offsets,
                    DataType dtype) {
  const size_t elem = data_type_bytes(dtype);
  size_t at = 0;  // host data element where the current member's block starts
  for (int member : topology.host_members(host)) {
    const size_t block = counts[member];
    const size_t lo = std::max(at, first);
    const size_t hi = std::min(at + block, first + count);
    if (lo < hi) {
      HORA_RETURN_IF_ERROR(detail::copy_if_distinct(comm, src + (lo - first) * elem,
                                                    out + (offsets[member] + lo - at) * elem,
                                                    hi - lo, dtype));
    }
    at += block;
    if (at >= first + count) break;
  }
  return Status::OK();
}

}  // namespace

Status hierarchical_allgatherv(Communicator& comm, const Topology& topology, const void* in,
                               void* out, const std::vector<size_t>& counts, DataType dtype,
                               const AlgorithmOptions& options) {
  HORA_RETURN_IF_ERROR(detail::check_topology(comm, topology, "hierarchical allgatherv"));
  const int n = comm.size();
  HORA_RETURN_IF_ERROR(
      detail::check_count_per_rank(comm, n, counts.size(), "hierarchical allgatherv", "counts"));
  const std::vector<size_t> offsets = detail::prefix_offsets(counts);
  if (offsets[n] == 0) return Status::OK();
  if (topology.hosts() == 1 || n == 1)
    return ring_allgatherv(comm, in, out, counts, dtype, options);

  ScratchPool local_pool;
  ScratchPool& pool = detail::scratch_pool(options, local_pool);
  const size_t elem = data_type_bytes(dtype);
  auto* out_bytes = static_cast<uint8_t*>(out);
  const int hosts = topology.hosts();
  const int lanes = topology.lanes();
  const int j = topology.local_index();
  const int h = topology.host_of(comm.rank());

  std::vector<std::vector<size_t>> parts(hosts), part_offsets(hosts);
  for (int g = 0; g < hosts; ++g) {
    size_t total = 0;
    for (int member : topology.host_members(g)) total += counts[member];
    parts[g] = even_split(total, lanes);
    part_offsets[g] = detail::prefix_offsets(parts[g]);
  }
  SubCommunicator local(comm, topology.local_members());

  // 1. Within the host.
  std::vector<size_t> host_counts;
  for (int member : topology.local_members()) host_counts.push_back(counts[member]);
  const size_t host_total = part_offsets[h][lanes];
  HORA_ASSIGN_OR_RETURN(uint8_t * stage, detail::acquire(comm, pool, 2, host_total * elem));
  HORA_RETURN_IF_ERROR(ring_allgatherv(local, in, stage, host_counts, dtype, options)
                           .with_context("(hierarchical allgatherv: gather within the host)"));

  // 2. Across hosts, lane j.
  std::vector<size_t> lane_totals(static_cast<size_t>(local.size()), 0);
  for (int k = 0; k < lanes; ++k)
    for (int g = 0; g < hosts; ++g) lane_totals[k] += parts[g][k];
  uint8_t* lane_buf = nullptr;
  if (j < lanes) {
    HORA_ASSIGN_OR_RETURN(lane_buf, detail::acquire(comm, pool, 3, lane_totals[j] * elem));
    std::vector<size_t> lane_counts(static_cast<size_t>(hosts));
    for (int g = 0; g < hosts; ++g) lane_counts[g] = parts[g][j];
    SubCommunicator lane(comm, topology.lane_members());
    HORA_RETURN_IF_ERROR(
        ring_allgatherv(lane, stage + part_offsets[h][j] * elem, lane_buf, lane_counts, dtype,
                        options)
            .with_context("(hierarchical allgatherv: lane " + std::to_string(j) + ")"));
  }

  // 3. Within the host: every lane's buffer to every local rank.
  const std::vector<size_t> lane_offsets = detail::prefix_offsets(lane_totals);
  uint8_t* all = lane_buf;
  if (local.size() > 1) {
    HORA_ASSIGN_OR_RETURN(all, detail::acquire(comm, pool, 2, offsets[n] * elem));
    const void* mine = lane_buf != nullptr ? lane_buf : all + lane_offsets[j] * elem;
    HORA_RETURN_IF_ERROR(ring_allgatherv(local, mine, all, lane_totals, dtype, options)
                             .with_context("(hierarchical allgatherv: lanes within the host)"));
  }

  // 4. Every piece to its ranks' places.
  for (int k = 0; k < lanes; ++k) {
    size_t at = lane_offsets[k];
    for (int g = 0; g < hosts; ++g) {
      HORA_RETURN_IF_ERROR(unpack_piece(comm, topology, g, part_offsets[g][k], parts[g][k],
                                        all + at * elem, out_bytes, counts, offsets, dtype));
      at += parts[g][k];
    }
  }
  return detail::finish(comm, options.deadline);  // the unpacking copies, on device buffers
}

}  // namespace collectives
}  // namespace hora
