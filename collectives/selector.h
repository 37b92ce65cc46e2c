// Selector: picks the allreduce algorithm for one collective from the byte count, the rank
// count and the backend, with a small alpha-beta cost model, or obeys an override.
//
// Cost model (per algorithm and backend): time = messages x alpha + bytes moved x beta +
// bytes reduced x gamma, with the constants for each backend in one table in selector.cc.
// They are initial estimates from the figures in issue 4 (loopback TCP ~3.3 GB/s and ~18 us
// one way, memcpy ~15 GB/s, Gloo's and MPI's built-in allreduce as measured there), to be
// calibrated from hora-bench sweeps; the table says which numbers came from where.
//
// core/ maps HORA_ALLREDUCE_ALGO onto Algorithm with parse_algorithm (collectives cannot
// include core/config.h: core is the layer above). Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "collectives/communicator.h"
#include "core/base/status.h"

namespace hora {
namespace collectives {

enum class Algorithm : uint8_t { kAuto = 0, kRing, kTree, kRecursiveDoubling, kNative };

// "auto", "ring", "tree", "rd", "native".
const char* algorithm_name(Algorithm algorithm);
// Parses "auto", "ring", "tree", "rd" (also "recursive_doubling"), "native". An unknown value
// is kInvalidArgument naming it, the accepted names and HORA_ALLREDUCE_ALGO.
StatusOr<Algorithm> parse_algorithm(const std::string& text);

// Estimated microseconds of one allreduce of `bytes` per rank on `ranks` ranks over
// `backend` ("gloo", "mpi", "builtin", "nccl"; others cost like gloo without a native
// allreduce). A negative value means "not available" (native on a backend without one).
// REQUIRES: algorithm is not kAuto.
double estimate_allreduce_us(Algorithm algorithm, const std::string& backend, size_t bytes,
                             int ranks);

struct Selection {
  Algorithm algorithm = Algorithm::kRing;
  double estimated_us = 0;   // of the chosen algorithm
  bool is_override = false;  // true when `requested` was not kAuto
};

// The algorithm for one allreduce: `requested` itself unless it is kAuto, else the cheapest
// available one by the cost model (ties go to the more deterministic-by-construction
// hora algorithms over native). Logs the choice at debug level. Never fails: an override of
// kNative on a backend without one is returned as is, and the communicator's allreduce then
// reports kUnimplemented naming the backend.
Selection select_allreduce(size_t bytes, int ranks, const std::string& backend,
                           Algorithm requested = Algorithm::kAuto);

// Every candidate's estimate, for benchmarks and tests (unavailable ones have estimate < 0).
std::vector<Selection> explain_allreduce(size_t bytes, int ranks, const std::string& backend);

// Runs one allreduce with `algorithm` (kAuto selects by the model first). kNative calls
// comm.allreduce; for kAverage it asks for kSum and scales by 1/size itself, so every
// algorithm returns the average and the caller never scales again.
Status run_allreduce(Algorithm algorithm, Communicator& comm, const void* in, void* out,
                     size_t count, DataType dtype, ReduceOp op, const AlgorithmOptions& options);

}  // namespace collectives
}  // namespace hora
