// The reference trainer's data: a synthetic but learnable classification set generated from a
// seed (Gaussian clusters, several per class, so the classes are not linearly separable), and
// ShardedLoader, which cuts each epoch into global batches and hands every rank its slice.
//
// Determinism: the same spec gives the same bits on every rank and every run. Each epoch has
// one permutation drawn from (seed, epoch); global batch s is positions [s*B, (s+1)*B) of it
// and rank r of N takes the r-th contiguous B/N of that batch. So N ranks with per-rank batch
// B/N see exactly the samples one rank sees with batch B, which is what makes distributed
// training with averaged gradients equal to single-process training.
//
// Plain values; distinct objects may be used from different threads.
#pragma once

#include <cstdint>
#include <vector>

#include "examples/trainer/matrix.h"
#include "hora/status.h"

namespace hora {
namespace trainer {

struct DatasetSpec {
  uint64_t seed = 1;
  int64_t train_count = 16384;
  int64_t test_count = 2048;
  int64_t input_dim = 32;
  int64_t class_count = 10;
  int64_t clusters_per_class = 3;
  double separation = 0.8;  // std of the cluster centres, in units of the within-cluster std
};

struct Dataset {
  Matrix features;              // [count, input_dim]
  std::vector<int32_t> labels;  // [count], each in [0, class_count)
  int64_t count() const { return features.rows; }
};

struct SplitDataset {
  Dataset train;
  Dataset test;  // held out: drawn from the same clusters, other samples
};

// Fails with kInvalidArgument naming the field when a count or dimension is < 1 (test_count
// may be 0) or separation <= 0.
StatusOr<SplitDataset> make_dataset(const DatasetSpec& spec);

// Copies rows `indices` of `data` into x ([indices.size(), input_dim]) and labels.
void gather_rows(const Dataset& data, const std::vector<int64_t>& indices, Matrix& x,
                 std::vector<int32_t>& labels);

class ShardedLoader {
 public:
  // global_batch: samples per step over all ranks. Fails with kInvalidArgument when
  // global_batch < size, is not a multiple of size, or exceeds the data set, or when rank is
  // not in [0, size).
  static StatusOr<ShardedLoader> create(const Dataset& data, int64_t global_batch, int rank,
                                        int size, uint64_t shuffle_seed);

  int64_t steps_per_epoch() const { return data_->count() / global_batch_; }
  int64_t local_batch() const { return global_batch_ / size_; }
  // The global batch `step` of `epoch` (all ranks' samples, in rank order).
  std::vector<int64_t> global_indices(int64_t epoch, int64_t step) const;
  // This rank's slice of it.
  std::vector<int64_t> local_indices(int64_t epoch, int64_t step) const;
  // Fills x and labels with this rank's slice. REQUIRES: step < steps_per_epoch().
  void load(int64_t epoch, int64_t step, Matrix& x, std::vector<int32_t>& labels);

 private:
  ShardedLoader(const Dataset* data, int64_t global_batch, int rank, int size, uint64_t seed)
      : data_(data), global_batch_(global_batch), rank_(rank), size_(size), seed_(seed) {}
  const std::vector<int64_t>& permutation(int64_t epoch) const;

  const Dataset* data_;  // not owned; must outlive the loader
  int64_t global_batch_;
  int rank_, size_;
  uint64_t seed_;
  mutable int64_t perm_epoch_ = -1;
  mutable std::vector<int64_t> perm_;  // the permutation of perm_epoch_
};

}  // namespace trainer
}  // namespace hora
