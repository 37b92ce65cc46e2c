// Checkpoints: a round trip restores parameters, optimizer state and epoch bit for bit; a
// corrupted, truncated, foreign or mismatched file is a clear error that leaves the model
// untouched.
#include "examples/trainer/checkpoint.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "examples/trainer/adam.h"
#include "examples/trainer/mlp.h"

namespace hora {
namespace trainer {
namespace {

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "hora_checkpoint_test_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".ckpt";
  }
  void TearDown() override { std::remove(path_.c_str()); }

  std::string read_file() {
    std::ifstream in(path_, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  void write_file(const std::string& bytes) {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out << bytes;
  }

  std::string path_;
};

// A trained-looking model and Adam state (one step taken, so the moments are non-zero).
struct Job {
  Mlp model;
  std::unique_ptr<Adam> adam;
  explicit Job(uint64_t seed) : model(Mlp::create({4, 3, 2}, seed).value()) {
    adam = Adam::create(model.parameters(), {}).value();
    for (const Parameter& p : model.parameters())
      for (int64_t i = 0; i < p.count; ++i) p.grad[i] = 0.01f * static_cast<float>(i + seed);
    EXPECT_TRUE(adam->step().ok());
  }
  std::vector<float> flat() {
    std::vector<float> all;
    for (const Parameter& p : model.parameters()) all.insert(all.end(), p.value, p.value + p.count);
    for (const StateTensor& s : adam->state()) all.insert(all.end(), s.data, s.data + s.count);
    return all;
  }
};

TEST_F(CheckpointTest, RoundTripRestoresEverything) {
  Job saved(1), restored(2);
  ASSERT_NE(saved.flat(), restored.flat());
  ASSERT_TRUE(save_checkpoint(path_, saved.model.parameters(), saved.adam->state(), 7).ok());
  auto epoch = load_checkpoint(path_, restored.model.parameters(), restored.adam->state());
  ASSERT_TRUE(epoch.ok()) << epoch.status().to_string();
  EXPECT_EQ(epoch.value(), 7);
  EXPECT_EQ(saved.flat(), restored.flat());
}

TEST_F(CheckpointTest, CorruptedFileIsAClearErrorAndChangesNothing) {
  Job saved(1), other(2);
  ASSERT_TRUE(save_checkpoint(path_, saved.model.parameters(), saved.adam->state(), 1).ok());
  std::string bytes = read_file();
  const std::vector<float> before = other.flat();

  bytes[bytes.size() / 2] ^= 0x40;  // one flipped bit in the payload
  write_file(bytes);
  Status s = load_checkpoint(path_, other.model.parameters(), other.adam->state()).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("checksum mismatch"), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find(path_), std::string::npos) << s.to_string();
  EXPECT_EQ(other.flat(), before);

  bytes[bytes.size() / 2] ^= 0x40;
  write_file(bytes.substr(0, bytes.size() - 9));  // truncated
  s = load_checkpoint(path_, other.model.parameters(), other.adam->state()).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_EQ(other.flat(), before);

  write_file("this is not a checkpoint at all");
  s = load_checkpoint(path_, other.model.parameters(), other.adam->state()).status();
  EXPECT_NE(s.message().find("not a hora checkpoint"), std::string::npos) << s.to_string();

  std::string future = bytes;
  future[8] = 9;  // version 9
  write_file(future);
  s = load_checkpoint(path_, other.model.parameters(), other.adam->state()).status();
  EXPECT_NE(s.message().find("format version 9, expected 1"), std::string::npos) << s.to_string();
}

TEST_F(CheckpointTest, AnotherModelShapeIsRejectedByName) {
  Job saved(1);
  ASSERT_TRUE(save_checkpoint(path_, saved.model.parameters(), saved.adam->state(), 1).ok());
  Mlp wider = Mlp::create({4, 5, 2}, 1).value();
  auto adam = Adam::create(wider.parameters(), {}).value();
  Status s = load_checkpoint(path_, wider.parameters(), adam->state()).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("parameter 'fc1.weight' has 12 elements, expected 20"),
            std::string::npos)
      << s.to_string();
  // Parameters only (no optimizer state expected): the file's state entries are unexpected.
  s = load_checkpoint(path_, saved.model.parameters(), {}).status();
  EXPECT_NE(s.message().find("unexpected entries"), std::string::npos) << s.to_string();
}

TEST_F(CheckpointTest, MissingFileIsAnIoError) {
  Job job(1);
  Status s = load_checkpoint(path_ + ".absent", job.model.parameters(), {}).status();
  EXPECT_EQ(s.code(), StatusCode::kIo);
  EXPECT_EQ(save_checkpoint("/nonexistent-dir/x.ckpt", job.model.parameters(), {}, 0).code(),
            StatusCode::kIo);
}

}  // namespace
}  // namespace trainer
}  // namespace hora
