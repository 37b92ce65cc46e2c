// Gaussian-cluster data generation and the per-epoch, per-rank batch plan.
#include "examples/trainer/dataset.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <string>

#include "hora/logging.h"

namespace hora {
namespace trainer {
namespace {

// splitmix64: decorrelates (seed, stream) pairs before they seed a generator.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

Dataset draw(const Matrix& centres, int64_t clusters_per_class, int64_t count, uint64_t seed) {
  Dataset data;
  data.features = Matrix(count, centres.cols);
  data.labels.resize(count);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::uniform_int_distribution<int64_t> pick(0, centres.rows - 1);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t cluster = pick(rng);
    data.labels[i] = static_cast<int32_t>(cluster / clusters_per_class);
    const float* c = centres.row(cluster);
    float* x = data.features.row(i);
    for (int64_t d = 0; d < centres.cols; ++d) x[d] = c[d] + noise(rng);
  }
  return data;
}

}  // namespace

StatusOr<SplitDataset> make_dataset(const DatasetSpec& spec) {
  auto bad = [](const char* field, double value, const char* expected) {
    return Status::invalid_argument(std::string("DatasetSpec.") + field + " is " +
                                    std::to_string(value) + ", expected " + expected);
  };
  if (spec.train_count < 1) return bad("train_count", spec.train_count, ">= 1");
  if (spec.test_count < 0) return bad("test_count", spec.test_count, ">= 0");
  if (spec.input_dim < 1) return bad("input_dim", spec.input_dim, ">= 1");
  if (spec.class_count < 2) return bad("class_count", spec.class_count, ">= 2");
  if (spec.clusters_per_class < 1)
    return bad("clusters_per_class", spec.clusters_per_class, ">= 1");
  if (!(spec.separation > 0.0)) return bad("separation", spec.separation, "> 0");

  Matrix centres(spec.class_count * spec.clusters_per_class, spec.input_dim);
  std::mt19937_64 rng(mix(spec.seed));
  std::normal_distribution<float> normal(0.0f, static_cast<float>(spec.separation));
  for (float& v : centres.data) v = normal(rng);

  SplitDataset split;
  split.train = draw(centres, spec.clusters_per_class, spec.train_count, mix(spec.seed + 1));
  split.test = draw(centres, spec.clusters_per_class, spec.test_count, mix(spec.seed + 2));
  return split;
}

void gather_rows(const Dataset& data, const std::vector<int64_t>& indices, Matrix& x,
                 std::vector<int32_t>& labels) {
  const int64_t dim = data.features.cols;
  x.resize(static_cast<int64_t>(indices.size()), dim);
  labels.resize(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) {
    const float* src = data.features.row(indices[i]);
    std::copy(src, src + dim, x.row(static_cast<int64_t>(i)));
    labels[i] = data.labels[indices[i]];
  }
}

StatusOr<ShardedLoader> ShardedLoader::create(const Dataset& data, int64_t global_batch, int rank,
                                              int size, uint64_t shuffle_seed) {
  if (size < 1 || rank < 0 || rank >= size)
    return Status::invalid_argument("ShardedLoader: rank " + std::to_string(rank) + " of size " +
                                    std::to_string(size) + ", expected 0 <= rank < size");
  if (global_batch < size || global_batch % size != 0)
    return Status::invalid_argument("ShardedLoader: global batch " + std::to_string(global_batch) +
                                    " does not split evenly over " + std::to_string(size) +
                                    " ranks; expected a positive multiple of the rank count");
  if (global_batch > data.count())
    return Status::invalid_argument("ShardedLoader: global batch " + std::to_string(global_batch) +
                                    " exceeds the data set's " + std::to_string(data.count()) +
                                    " samples");
  return ShardedLoader(&data, global_batch, rank, size, shuffle_seed);
}

const std::vector<int64_t>& ShardedLoader::permutation(int64_t epoch) const {
  if (perm_epoch_ != epoch) {
    perm_.resize(data_->count());
    std::iota(perm_.begin(), perm_.end(), int64_t{0});
    // A hand-written Fisher-Yates: std::shuffle's algorithm is not specified by the standard.
    std::mt19937_64 rng(mix(seed_ ^ mix(static_cast<uint64_t>(epoch))));
    for (int64_t i = data_->count() - 1; i > 0; --i) {
      const int64_t j = static_cast<int64_t>(rng() % static_cast<uint64_t>(i + 1));
      std::swap(perm_[i], perm_[j]);
    }
    perm_epoch_ = epoch;
  }
  return perm_;
}

std::vector<int64_t> ShardedLoader::global_indices(int64_t epoch, int64_t step) const {
  HORA_CHECK(step >= 0 && step < steps_per_epoch());
  const std::vector<int64_t>& perm = permutation(epoch);
  return std::vector<int64_t>(perm.begin() + step * global_batch_,
                              perm.begin() + (step + 1) * global_batch_);
}

std::vector<int64_t> ShardedLoader::local_indices(int64_t epoch, int64_t step) const {
  std::vector<int64_t> all = global_indices(epoch, step);
  const int64_t local = local_batch();
  return std::vector<int64_t>(all.begin() + rank_ * local, all.begin() + (rank_ + 1) * local);
}

void ShardedLoader::load(int64_t epoch, int64_t step, Matrix& x, std::vector<int32_t>& labels) {
  gather_rows(*data_, local_indices(epoch, step), x, labels);
}

}  // namespace trainer
}  // namespace hora
