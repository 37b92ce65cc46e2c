// Hierarchical collectives: the work within each host over the host's own links (shared
// memory on the builtin backend) and only a 1/lanes share of the data per rank across hosts,
// so each host's link to the others carries the buffer about once instead of the flat
// ring's 2 (n - 1) / n x ... per crossing rank. The words (host, local index, lanes K, lane)
// are collectives/topology.h's.
//
// Contract: algorithms.h's common contract (counts in elements, in place when in == out, OK at
// once for count 0, sum/average on bool refused first, deadline and tag from options,
// kAverage scaled once inside), plus:
// - `topology` describes `comm`'s ranks (same size, topology.rank() == comm.rank()); else
//   kInvalidArgument. Every rank passes an equal topology (exchange_topology gives that).
// - One host: the flat algorithm runs instead (ring allreduce, ring allgatherv).
// - Scratch: slots 0-1 (the inner ring, tree and recursive-doubling steps) and 2-3 (the
//   allgather's staging) of options.scratch.
// - Determinism: bitwise identical on every rank and from run to run (each file says why);
//   the bits may differ from a flat algorithm's (another reduction order).
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "collectives/topology.h"

namespace hora {
namespace collectives {

// Lane allreduces of at most this many bytes use recursive doubling, larger ones the ring:
// the builtin row's crossover (selector.cc: rd fastest up to 128 KiB).
constexpr size_t kHierarchicalRdMaxBytes = 128 * 1024;

// Allreduce: reduce-scatter within each host, allreduce across hosts within each lane,
// allgather within each host. hierarchical_allreduce.cc.
Status hierarchical_allreduce(Communicator& comm, const Topology& topology, const void* in,
                              void* out, size_t count, DataType dtype, ReduceOp op,
                              const AlgorithmOptions& options);

// Allgatherv (rank r contributes counts[r] elements, zero allowed; out in rank order, any
// placement of ranks on hosts): gather within each host, exchange 1/lanes of each host's
// data across hosts within each lane, gather the lanes within each host.
// hierarchical_allgatherv.cc.
Status hierarchical_allgatherv(Communicator& comm, const Topology& topology, const void* in,
                               void* out, const std::vector<size_t>& counts, DataType dtype,
                               const AlgorithmOptions& options);

namespace detail {
// OK when `topology` describes `comm`'s ranks (size and this rank), else kInvalidArgument
// naming both; `what` names the algorithm.
Status check_topology(const Communicator& comm, const Topology& topology, const char* what);
}  // namespace detail

}  // namespace collectives
}  // namespace hora
