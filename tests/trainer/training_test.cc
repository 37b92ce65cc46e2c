// A single-process training run learns the synthetic task, with SGD and with Adam; and the
// progress bar's text.
#include "examples/trainer/training.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "examples/trainer/adam.h"
#include "examples/trainer/progress_bar.h"
#include "examples/trainer/sgd.h"

namespace hora {
namespace trainer {
namespace {

// Trains {32, 64, 64, 10} for `epochs` on the default data set and returns the held-out
// accuracy.
double train_and_evaluate(bool use_adam, int epochs) {
  set_blas_threads(1);
  SplitDataset data = make_dataset(DatasetSpec{}).value();
  Mlp model = Mlp::create({32, 64, 64, 10}, 42).value();
  std::unique_ptr<Optimizer> opt;
  if (use_adam)
    opt = Adam::create(model.parameters(), {2e-3, 0.9, 0.999, 1e-8}).value();
  else
    opt = Sgd::create(model.parameters(), {0.05, 0.9, 0.0}).value();
  ShardedLoader loader = ShardedLoader::create(data.train, 64, 0, 1, 7).value();
  StepBuffers buffers;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    for (int64_t step = 0; step < loader.steps_per_epoch(); ++step) {
      loader.load(epoch, step, buffers.x, buffers.labels);
      EXPECT_TRUE(opt->zero_grad().ok());
      auto loss = forward_backward(model, buffers, nullptr);
      EXPECT_TRUE(loss.ok());
      EXPECT_TRUE(opt->step().ok());
    }
  }
  const double accuracy =
      static_cast<double>(count_correct_rows(model, data.test, 0, data.test.count())) /
      data.test.count();
  std::printf("%s: held-out accuracy %.4f after %d epochs\n", opt->name(), accuracy, epochs);
  return accuracy;
}

// Chance is 10%; the bound leaves room below what these runs reach (about 0.92).
constexpr double kLearnedAccuracy = 0.85;

TEST(TrainingTest, SgdLearnsTheSyntheticTask) {
  EXPECT_GT(train_and_evaluate(false, 3), kLearnedAccuracy);
}

TEST(TrainingTest, AdamLearnsTheSyntheticTask) {
  EXPECT_GT(train_and_evaluate(true, 3), kLearnedAccuracy);
}

TEST(ProgressBarTest, RendersStepLossRateAndEta) {
  EXPECT_EQ(render_progress("epoch 1/2", 5, 10, 0.5, 1000.0, 2.5, 10),
            "epoch 1/2 [#####-----]  5/10 loss 0.5000     1000 samples/s  ETA 2.5s");
}

}  // namespace
}  // namespace trainer
}  // namespace hora
