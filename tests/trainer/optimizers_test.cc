// Sgd and Adam: steps against values worked out by hand, state layout, option validation.
#include <gtest/gtest.h>

#include <vector>

#include "examples/trainer/adam.h"
#include "examples/trainer/sgd.h"

namespace hora {
namespace trainer {
namespace {

struct OneParameter {
  std::vector<float> value{1.0f, -2.0f};
  std::vector<float> grad{0.5f, 0.0f};
  std::vector<Parameter> params() { return {{"w", value.data(), grad.data(), 2}}; }
};

TEST(SgdTest, MomentumStepsMatchHandComputedValues) {
  OneParameter p;
  auto sgd = Sgd::create(p.params(), {0.1, 0.9, 0.0}).value();
  ASSERT_TRUE(sgd->step().ok());
  EXPECT_FLOAT_EQ(p.value[0], 0.95f);  // buf = 0.5; p = 1 - 0.1 * 0.5
  EXPECT_FLOAT_EQ(p.value[1], -2.0f);  // zero gradient: unchanged
  ASSERT_TRUE(sgd->step().ok());
  EXPECT_FLOAT_EQ(p.value[0], 0.855f);  // buf = 0.9 * 0.5 + 0.5 = 0.95; p = 0.95 - 0.095
  auto state = sgd->state();
  ASSERT_EQ(state.size(), 1u);
  EXPECT_EQ(state[0].name, "momentum/w");
  EXPECT_FLOAT_EQ(state[0].data[0], 0.95f);
}

TEST(SgdTest, WeightDecayAddsToTheGradient) {
  OneParameter p;
  auto sgd = Sgd::create(p.params(), {0.1, 0.0, 0.1}).value();
  ASSERT_TRUE(sgd->step().ok());
  EXPECT_FLOAT_EQ(p.value[0], 0.94f);   // g = 0.5 + 0.1 * 1; p = 1 - 0.1 * 0.6
  EXPECT_FLOAT_EQ(p.value[1], -1.98f);  // g = 0 + 0.1 * -2
}

TEST(SgdTest, ZeroGradClearsGradients) {
  OneParameter p;
  auto sgd = Sgd::create(p.params(), {}).value();
  ASSERT_TRUE(sgd->zero_grad().ok());
  EXPECT_EQ(p.grad, (std::vector<float>{0.0f, 0.0f}));
}

TEST(AdamTest, StepsMatchHandComputedValues) {
  OneParameter p;
  auto adam = Adam::create(p.params(), {0.1, 0.9, 0.999, 1e-8}).value();
  ASSERT_TRUE(adam->step().ok());
  // m = 0.05, v = 0.00025; m^ = 0.5, v^ = 0.25; p = 1 - 0.1 * 0.5 / (0.5 + 1e-8)
  EXPECT_NEAR(p.value[0], 0.9, 1e-6);
  EXPECT_FLOAT_EQ(p.value[1], -2.0f);
  p.grad[0] = 0.25f;
  ASSERT_TRUE(adam->step().ok());
  // m = 0.07, v = 0.00031225; m^ = 0.07 / 0.19, v^ = 0.00031225 / 0.001999
  EXPECT_NEAR(p.value[0], 0.80678204, 1e-6);
  auto state = adam->state();
  ASSERT_EQ(state.size(), 3u);
  EXPECT_EQ(state[0].name, "adam.step");
  EXPECT_EQ(state[0].data[0], 2.0f);
  EXPECT_EQ(state[1].name, "exp_avg/w");
  EXPECT_NEAR(state[1].data[0], 0.07, 1e-7);
  EXPECT_EQ(state[2].name, "exp_avg_sq/w");
  EXPECT_NEAR(state[2].data[0], 0.00031225, 1e-9);
}

TEST(OptimizerTest, InvalidOptionsAndNamesAreRejected) {
  OneParameter p;
  EXPECT_EQ(Sgd::create(p.params(), {0.0, 0.9, 0.0}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Sgd::create(p.params(), {0.1, 1.0, 0.0}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Adam::create(p.params(), {0.1, 0.9, 1.5, 1e-8}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Adam::create(p.params(), {0.1, 0.9, 0.99, 0.0}).status().code(),
            StatusCode::kInvalidArgument);
  std::vector<Parameter> twice = {p.params()[0], p.params()[0]};
  Status s = Sgd::create(twice, {}).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'w' appears twice"), std::string::npos) << s.to_string();
  std::vector<Parameter> unnamed = p.params();
  unnamed[0].name.clear();
  s = Adam::create(unnamed, {}).status();
  EXPECT_NE(s.message().find("has no name"), std::string::npos) << s.to_string();
}

}  // namespace
}  // namespace trainer
}  // namespace hora
