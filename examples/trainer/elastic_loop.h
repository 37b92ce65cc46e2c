// The reference trainer's elastic loop (train_mlp --elastic), hora/elastic.h in use: training
// that survives a worker's death or added hosts in the same processes.
//
//   commit (a copy of the parameters, the optimizer state and the position: epoch and step)
//   every --commit-every steps and at each epoch's end; at each commit, hosts_updated() (one
//   decision for every rank);
//   on a peer's failure (a collective's kRemote, kTimeout or kIo): restore the last commit,
//   hora::elastic::reset(false, error), broadcast the state from the new rank 0, go on;
//   on hosts updated: hora::elastic::reset(true, ...), broadcast the state, go on.
//
// The global batch is fixed (--global-batch-size, split evenly over the ranks of each
// generation) and the data order depends on the epoch alone (ShardedLoader), so the steps
// replayed after a rollback are the same global batches: the weights at the end are those of
// an uninterrupted run of the same schedule at any size (up to float rounding), e.g. one
// process. Outside an elastic job the same loop runs without resets (a failure is returned).
// One thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "examples/trainer/dataset.h"
#include "examples/trainer/mlp.h"
#include "hora/distributed_optimizer.h"
#include "hora/optimizer.h"
#include "hora/status.h"

namespace hora {
namespace trainer {

// Testing: rank `rank` of generation `generation` raises `signal` before global step `step`.
struct FailPoint {
  int64_t generation = 0;
  int64_t step = 0;
  int rank = 0;
  int signal = 0;
};
// "G:S:R:kill" or "G:S:R:stop"; kInvalidArgument naming the text otherwise.
StatusOr<FailPoint> parse_fail_point(const std::string& text);

struct ElasticSpec {
  int epochs = 1;
  int64_t global_batch = 60;  // divisible by every size the job takes
  int64_t commit_every = 10;  // steps
  uint64_t shuffle_seed = 1;
  DistributedOptions options;
  std::vector<FailPoint> fail_points;
  bool verbose = true;  // rank 0 prints a line per epoch and each rank one per reset
};

struct ElasticResult {
  int64_t resets = 0;
  double final_accuracy = 0.0;
};

// Trains `model` with `inner` (wrapped in a DistributedOptimizer per generation) on `data` as
// above. REQUIRES: hora::init returned OK. Errors: a failure outside elastic mode, or one that
// is not a peer's, or reset's own (removed from the job, horarun aborted, timeout).
StatusOr<ElasticResult> train_elastic(const ElasticSpec& spec, const SplitDataset& data, Mlp& model,
                                      Optimizer& inner);

}  // namespace trainer
}  // namespace hora
