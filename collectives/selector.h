// Selector: picks the allreduce algorithm for one collective from the byte count, the rank
// count and the backend, with a small alpha-beta cost model, or obeys an override.
//
// Cost model (per algorithm and backend): time = messages x alpha + bytes moved x beta +
// bytes reduced x gamma, with the constants for each backend in one table in selector.cc.
// They are initial estimates from the figures in issue 4 (loopback TCP ~3.3 GB/s and ~18 us
// one way, memcpy ~15 GB/s, Gloo's and MPI's built-in allreduce as measured there), to be
// calibrated from hora-bench sweeps; the table says which numbers came from where.
//
// Calibration (calibration.h): when the topology passed in carries an AllreduceCalibration
// measured on the same cost model, the candidates and their estimates are that calibration's
// (this machine's figures, agreed on every rank); the table's own choice is kept unless it
// measured more than 10% slower than the best measured (probe noise cannot flip a choice the
// table gets right, and auto stays within 10% of the best measured). The table
// stays the fallback (one rank, HORA_CALIBRATE_MS=0, other backends such as nccl's GPU
// communicator) and the override's estimate.
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
#include "collectives/topology.h"
#include "hora/status.h"

namespace hora {
namespace collectives {

// kHierarchical: algorithms/hierarchical.h, over AlgorithmOptions::topology's hosts.
enum class Algorithm : uint8_t {
  kAuto = 0,
  kRing,
  kTree,
  kRecursiveDoubling,
  kNative,
  kHierarchical
};

// "auto", "ring", "tree", "rd", "native", "hierarchical".
const char* algorithm_name(Algorithm algorithm);
// Parses "auto", "ring", "tree", "rd" (also "recursive_doubling"), "native", "hierarchical".
// An unknown value is kInvalidArgument naming it, the accepted names and HORA_ALLREDUCE_ALGO.
StatusOr<Algorithm> parse_algorithm(const std::string& text);

// Estimated microseconds of one allreduce of `bytes` per rank on `ranks` ranks over
// `backend` ("gloo", "mpi", "builtin", "nccl"; others cost like gloo without a native
// allreduce). A negative value means "not available" (native on a backend without one;
// hierarchical, which needs a topology). REQUIRES: algorithm is not kAuto.
double estimate_allreduce_us(Algorithm algorithm, const std::string& backend, size_t bytes,
                             int ranks);
// The same on topology's ranks, whose hosts and measured links (topology.h) enter the model:
//   flat algorithms pay, at every step, the slower of the two links (a flat ring placed host
//   by host has one edge per host boundary; rd and tree cross hosts in some rounds);
//   hierarchical pays 2 (L - 1) intra-host ring steps of 1/K of the buffer (L: most ranks on
//   a host, K lanes) plus a lane allreduce of 1/K of it across H hosts, whose K lanes share
//   each host's link (the cross link's beta times K); native is capped by the cross link.
// Unmeasured links cost the backend's row. One host: hierarchical costs as the ring.
double estimate_allreduce_us(Algorithm algorithm, const std::string& backend, size_t bytes,
                             const Topology& topology);

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
// With a topology of more than one host, estimates come from its overload above and
// hierarchical is a candidate too (last in the tie-break order).
Selection select_allreduce(size_t bytes, int ranks, const std::string& backend,
                           Algorithm requested = Algorithm::kAuto,
                           const Topology* topology = nullptr);

// The table's own choice (the cost model fitted in selector.cc, never a calibration): what a
// calibrated choice must beat by kCalibratedMargin to replace (select_allreduce), and what
// the calibration confirms a probe against (calibrate_allreduce).
Algorithm table_allreduce_choice(size_t bytes, int ranks, const std::string& backend,
                                 const Topology* topology = nullptr);
// A measured choice replaces the table's only when the table's own choice measured more than
// this much slower: noise in the probes then cannot flip a choice the table already gets right.
// Half the selector's 10% target, either way: a kept table choice is within 5% of the best
// measured, a replacing one measured over 5% faster (at 10%, a table choice measured 9% slower
// was kept, and on shared memory at 8 KiB it ran 0.87-0.92x of rd). The tuner's margin too.
constexpr double kCalibratedMargin = 1.05;

// Every candidate's estimate, for benchmarks and tests (unavailable ones have estimate < 0);
// hierarchical is listed only with a topology of more than one host. With a calibration that
// applies (see above), exactly its measured candidates, estimated from its figures.
std::vector<Selection> explain_allreduce(size_t bytes, int ranks, const std::string& backend,
                                         const Topology* topology = nullptr);

// Runs one allreduce with `algorithm` (kAuto selects by the model first, with
// options.topology). kHierarchical runs hierarchical_allreduce on options.topology (the ring
// when it is null: one host assumed). kNative calls
// comm.allreduce; for kAverage it asks for kSum and scales by 1/size itself, so every
// algorithm returns the average and the caller never scales again. Sum and average on bool
// are refused (kInvalidArgument, check_reduce_op) whichever algorithm is asked for. kAdasum
// runs adasum_allreduce (one tensor) whichever algorithm is asked for.
Status run_allreduce(Algorithm algorithm, Communicator& comm, const void* in, void* out,
                     size_t count, DataType dtype, ReduceOp op, const AlgorithmOptions& options);

}  // namespace collectives
}  // namespace hora
