// hora-bench's command line: the flags (nccl-tests' names where it has one), parsed with
// CLI11 and validated into one Options value. Parsing never prints and never exits: errors
// come back as a Status whose message is one line, so the caller can print it on rank 0 only
// and make every rank exit non-zero together.
//
//   hora-bench allreduce|allgather|broadcast|reducescatter|alltoall [-b MIN] [-e MAX]
//     [-f FACTOR | -i STEP] [-d dtype] [-o op] [-r root] [-n iters] [-w warmup] [-c 0|1]
//     [--rounds R] [--min-ms T]
//     [--algo ring|tree|rd|native|auto] [--backend builtin|gloo|mpi|nccl] [--through-engine]
//     [--compare hora,gloo,mpi,wire,nccl] [--device cpu|cuda|cuda:N] [--json FILE] [--csv FILE]
//     [--plot FILE.svg]
//
// Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "benchmarks/hora_bench/collective.h"
#include "collectives/selector.h"
#include "hora/data_type.h"
#include "hora/device.h"
#include "hora/reduce_op.h"
#include "hora/status.h"

namespace hora {
namespace bench {

struct Options {
  Collective collective = Collective::kAllreduce;
  size_t min_bytes = 32 << 20;          // -b (nccl-tests' default is 32 MiB)
  size_t max_bytes = 32 << 20;          // -e
  double step_factor = 2.0;             // -f: multiply the size by this per step ...
  size_t step_bytes = 0;                // -i: ... or add this (when non-zero)
  DataType dtype = DataType::kFloat32;  // -d
  ReduceOp op = ReduceOp::kSum;         // -o
  bool op_given = false;                // -o was on the command line
  int root = 0;                         // -r
  int iters = 20;                       // -n
  int warmup = 5;                       // -w
  // --rounds: per size, every implementation is timed this many times in turn (the order
  // reversed every other round), -n iterations each, and its statistics taken over all of
  // them, so that a noisy machine's drift falls on every column alike.
  int rounds = 1;
  // --min-ms: each implementation's -n timed iterations of a round are followed by as many
  // more as bring the round to at least this many milliseconds (the count agreed by every
  // rank), so a call of 0.3 us is timed thousands of times, not 20; 0: exactly -n.
  double min_ms = 0;
  bool check = true;                                            // -c
  collectives::Algorithm algo = collectives::Algorithm::kAuto;  // --algo
  std::string backend;  // --backend: hora's algorithms over it; empty = job's
  // --device: where the sweep's buffers live. cuda index -1 = this rank's GPU (local rank
  // modulo the GPUs). On a GPU hora runs over nccl (backend "nccl") and only hora (its
  // algorithms, and the engine with --through-engine) and nccl compare (no gloo, mpi, wire).
  Device device = Device::cpu();
  bool through_engine = false;  // --through-engine
  // --load: busy compute threads per rank, running beside the sweep (busy_load.h), as a
  // training process keeps its cores busy; 0: an idle machine.
  int load_threads = 0;
  // --compare: which baselines run ("gloo", "mpi", "wire": the transport's ceiling for a
  // ring; "nccl": NCCL's own collectives, on the GPU only; "hora" adds nothing else); any entry
  // also runs hora through each of its algorithms.
  // Empty = hora with --algo only.
  std::vector<std::string> compare;
  std::string json_path;  // --json
  std::string csv_path;   // --csv
  std::string plot_path;  // --plot
};

// Parses argv (argv[0] is the program name). kInvalidArgument, one line, on any bad flag or
// value: min > max, a size that does not parse, an unknown dtype, op, algorithm or backend,
// an op given to a collective that reduces nothing, average on an integer dtype, -f <= 1,
// -f together with -i, iterations < 1, warmup < 0, rounds < 1, min-ms < 0 or over 60000, an unknown
// --compare entry, a --plot path not ending in .svg.
StatusOr<Options> parse_options(int argc, const char* const* argv);
// The same for a list of arguments without the program name (tests).
StatusOr<Options> parse_options(const std::vector<std::string>& args);

// Checks what needs the job's rank count: root < ranks.
Status validate_for_job(const Options& options, int ranks);

// The sizes of the sweep, min to max inclusive (the last step may be max itself only when
// the steps land on it).
std::vector<size_t> sweep_sizes(const Options& options);

// The one-line usage hint printed after an error, and the full help text.
std::string usage_hint();
std::string help_text();

}  // namespace bench
}  // namespace hora
