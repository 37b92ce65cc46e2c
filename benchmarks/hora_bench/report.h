// The table hora-bench prints on rank 0, in nccl-tests' layout:
//
//   header: the machine, backend, rank count and settings;
//   one row per size: size(B) count type redop root, then for out of place and then in place
//     time(us) (median) algbw busbw (decimal GB/s) #wrong;
//   with several implementations (--compare, out of place only): time(us) and busbw per
//     implementation, the total #wrong and the ratio hora/best-other (hora's chosen algorithm
//     over the best baseline, Gloo or MPI, at that size; the wire column is a bound, not a
//     baseline);
//     With --compare and --algo auto on allreduce, two more: auto (the algorithm hora's
//     selector chose at that size) and auto/algo (the fastest of hora's fixed algorithms'
//     time over auto's: 1.00x when auto chose the best; with --rounds, the median of the
//     ratios within each round, auto against the algorithm fastest over all rounds);
//   footer: the average busbw (per implementation), auto/algo's summary (sizes within 0.90x
//     and the worst) and the total #wrong.
//
// A Reporter collects rows as the sweep produces them and returns text; the caller prints.
// Not thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "benchmarks/hora_bench/machine.h"
#include "benchmarks/hora_bench/options.h"
#include "benchmarks/hora_bench/runner.h"

namespace hora {
namespace bench {

struct RunInfo {
  Options options;
  int ranks = 1;
  std::string backend;             // of hora's algorithms
  std::string launcher;            // "horarun", "mpirun", ...
  std::vector<std::string> impls;  // column order
  MachineInfo machine;
  std::string timestamp;
};

class Reporter {
 public:
  explicit Reporter(RunInfo info);

  std::string header() const;
  // Takes one (size, placement) row of measurements; returns the text to print now (a table
  // line once a size is complete, else empty).
  std::string add_row(const std::vector<Measurement>& row);
  std::string footer() const;

  bool is_compare() const { return info_.impls.size() > 1; }
  // The auto and auto/algo columns: a --compare allreduce run with --algo auto.
  bool has_auto_ratio() const;
  int64_t total_wrong() const { return total_wrong_; }

 private:
  std::string single_line(const std::vector<Measurement>& out_of_place,
                          const std::vector<Measurement>& in_place) const;
  std::string compare_line(const std::vector<Measurement>& row) const;

  RunInfo info_;
  std::vector<Measurement> pending_;  // the out-of-place row waiting for its in-place one
  std::vector<Measurement> all_;
  int64_t total_wrong_ = 0;
  std::vector<std::pair<size_t, double>> auto_ratios_;  // (size, auto/algo) per row
};

// hora's busbw over the best baseline's in one row (hora = the first hora implementation);
// 0 when the row has no available baseline or hora is unavailable.
double hora_ratio(const std::vector<Measurement>& row);
// hora auto's standing among hora's own algorithms in one row: the fastest fixed algorithm's
// median time over auto's (1.00x: auto took the best; the selector's target is >= 0.90x),
// with auto's choice in *choice. Where both have per-round medians (--rounds > 1), the ratio
// is the median over rounds of the two within a round, the fastest algorithm still the one
// fastest over all rounds. 0 when the row has no auto or no other hora algorithm.
double auto_ratio(const std::vector<Measurement>& row, std::string* choice);

}  // namespace bench
}  // namespace hora
