// The synthetic data set: determinism from the seed, and a shard plan in which the ranks'
// slices partition each global batch in rank order.
#include "examples/trainer/dataset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

namespace hora {
namespace trainer {
namespace {

DatasetSpec small_spec(uint64_t seed) {
  DatasetSpec spec;
  spec.seed = seed;
  spec.train_count = 240;
  spec.test_count = 60;
  spec.input_dim = 8;
  spec.class_count = 4;
  return spec;
}

TEST(DatasetTest, SameSeedSameBitsOtherSeedOtherData) {
  SplitDataset a = make_dataset(small_spec(5)).value();
  SplitDataset b = make_dataset(small_spec(5)).value();
  SplitDataset c = make_dataset(small_spec(6)).value();
  EXPECT_EQ(a.train.features.data, b.train.features.data);
  EXPECT_EQ(a.train.labels, b.train.labels);
  EXPECT_EQ(a.test.features.data, b.test.features.data);
  EXPECT_NE(a.train.features.data, c.train.features.data);
  EXPECT_NE(a.train.features.data, a.test.features.data);  // held out: other samples
  EXPECT_EQ(a.train.count(), 240);
  EXPECT_EQ(a.test.count(), 60);
  std::set<int32_t> classes(a.train.labels.begin(), a.train.labels.end());
  EXPECT_EQ(classes, (std::set<int32_t>{0, 1, 2, 3}));
}

TEST(DatasetTest, ShardsPartitionEachGlobalBatchInRankOrder) {
  SplitDataset data = make_dataset(small_spec(1)).value();
  const int64_t global = 24;
  for (int size : {1, 2, 3, 4}) {
    std::vector<ShardedLoader> loaders;
    for (int r = 0; r < size; ++r)
      loaders.push_back(ShardedLoader::create(data.train, global, r, size, 9).value());
    EXPECT_EQ(loaders[0].steps_per_epoch(), 10);
    EXPECT_EQ(loaders[0].local_batch(), global / size);
    for (int64_t epoch : {0, 1}) {
      std::set<int64_t> seen_in_epoch;
      for (int64_t step = 0; step < loaders[0].steps_per_epoch(); ++step) {
        std::vector<int64_t> joined;
        for (int r = 0; r < size; ++r) {
          std::vector<int64_t> part = loaders[r].local_indices(epoch, step);
          joined.insert(joined.end(), part.begin(), part.end());
        }
        ASSERT_EQ(joined, loaders[0].global_indices(epoch, step)) << "size " << size;
        seen_in_epoch.insert(joined.begin(), joined.end());
      }
      EXPECT_EQ(seen_in_epoch.size(), 240u) << "every sample once per epoch";
    }
  }
  // The plan depends on the seed and the epoch, not on the rank count.
  auto one = ShardedLoader::create(data.train, global, 0, 1, 9).value();
  auto four = ShardedLoader::create(data.train, global, 3, 4, 9).value();
  EXPECT_EQ(one.global_indices(1, 2), four.global_indices(1, 2));
  EXPECT_NE(one.global_indices(0, 0), one.global_indices(1, 0));
}

TEST(DatasetTest, LoadCopiesTheRankSlice) {
  SplitDataset data = make_dataset(small_spec(1)).value();
  auto loader = ShardedLoader::create(data.train, 8, 1, 2, 3).value();
  Matrix x;
  std::vector<int32_t> labels;
  loader.load(0, 0, x, labels);
  const std::vector<int64_t> idx = loader.local_indices(0, 0);
  ASSERT_EQ(x.rows, 4);
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(labels[i], data.train.labels[idx[i]]);
    EXPECT_EQ(x.at(i, 7), data.train.features.at(idx[i], 7));
  }
}

TEST(DatasetTest, BadSpecsAndSplitsAreRejected) {
  DatasetSpec spec = small_spec(1);
  spec.input_dim = 0;
  Status s = make_dataset(spec).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("input_dim is 0"), std::string::npos) << s.to_string();
  SplitDataset data = make_dataset(small_spec(1)).value();
  s = ShardedLoader::create(data.train, 10, 0, 3, 1).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("global batch 10"), std::string::npos) << s.to_string();
  EXPECT_FALSE(ShardedLoader::create(data.train, 480, 0, 1, 1).ok());
  EXPECT_FALSE(ShardedLoader::create(data.train, 8, 2, 2, 1).ok());
}

}  // namespace
}  // namespace trainer
}  // namespace hora
