// SinglePlan: what one allgather, alltoall or reducescatter moves, in elements, and the shape of
// its output, computed the same way for host tensors (executor.cc) and device tensors
// (device_collectives.cc), so both get the same result. Allgather: each rank's rows (the
// response's first_dims); alltoall: this rank's row of the agreed splits matrix out, its column
// in; reducescatter: the first dimension split evenly (collectives::even_split), this rank's
// part out. Pure functions; background thread (as their callers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "collectives/communicator.h"
#include "collectives/topology.h"
#include "core/engine/message.h"
#include "core/engine/tensor_queue.h"

namespace hora {
namespace engine {

struct SinglePlan {
  std::vector<size_t> send;  // alltoall: per peer; allgather/reducescatter: per rank
  std::vector<size_t> recv;  // alltoall: per peer
  size_t in_count = 0;
  size_t out_count = 0;
  std::vector<int64_t> shape;  // of the output
};

// The plan of `r` (kAllgather, kAlltoall or kReducescatter) for entry `e` at `rank` of `size`.
// An alltoall also leaves the rows received from each peer in *received_splits.
SinglePlan plan_single(const Response& r, const Entry& e, int rank, int size,
                       std::vector<int64_t>* received_splits);

// The host path's algorithm for `p` over `comm`, from `in` to `out`: ring allgatherv (the
// hierarchical one over `allgather_topology` when not null), pairwise alltoallv, ring
// reducescatter.
Status run_host_plan(collectives::Communicator& comm, const Response& r, const SinglePlan& p,
                     const void* in, void* out, const collectives::AlgorithmOptions& ao,
                     const collectives::Topology* allgather_topology);

// The collective's name as Horovod's timeline shows it: ALLREDUCE, BROADCAST, ...
std::string timeline_phase(CollectiveType type);

}  // namespace engine
}  // namespace hora
