// Gradient checks: every layer's backward (and the whole Mlp's) against central finite
// differences of the loss, computed in double from float forwards.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "examples/trainer/activations.h"
#include "examples/trainer/dense.h"
#include "examples/trainer/mlp.h"

namespace hora {
namespace trainer {
namespace {

Matrix random_matrix(int64_t rows, int64_t cols, uint64_t seed, float scale = 1.0f) {
  Matrix m(rows, cols);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  for (float& v : m.data) v = normal(rng);
  return m;
}

// Checks analytic[i] against (f(x+h) - f(x-h)) / 2h for every element of `x`.
void expect_matches_finite_differences(std::vector<float>& x, const std::vector<float>& analytic,
                                       const std::function<double()>& loss, const char* what,
                                       float h = 1e-2f) {
  ASSERT_EQ(x.size(), analytic.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float saved = x[i];
    x[i] = saved + h;
    const double up = loss();
    x[i] = saved - h;
    const double down = loss();
    x[i] = saved;
    const double numeric = (up - down) / (2.0 * h);
    EXPECT_NEAR(analytic[i], numeric, 2e-3 + 2e-2 * std::fabs(numeric)) << what << " [" << i << "]";
  }
}

// loss = sum(y .* r): dL/dy = r, so backward(r) must give the gradient of this loss.
TEST(LayersTest, DenseGradientsMatchFiniteDifferences) {
  Dense layer(5, 4);
  std::mt19937_64 rng(3);
  layer.init(rng);
  for (float& b : layer.bias().data) b = 0.1f;
  Matrix x = random_matrix(3, 5, 11), r = random_matrix(3, 4, 12), y;
  auto loss = [&] {
    layer.forward(x, y);
    double sum = 0;
    for (int64_t i = 0; i < y.count(); ++i) sum += static_cast<double>(y.data[i]) * r.data[i];
    return sum;
  };
  loss();
  layer.weight_grad().fill(0.0f);
  layer.bias_grad().fill(0.0f);
  layer.backward_weight(r);
  layer.backward_bias(r);
  Matrix dx;
  layer.backward_input(r, dx);
  expect_matches_finite_differences(layer.weight().data, layer.weight_grad().data, loss, "dW");
  expect_matches_finite_differences(layer.bias().data, layer.bias_grad().data, loss, "db");
  expect_matches_finite_differences(x.data, dx.data, loss, "dx");
}

TEST(LayersTest, DenseGradientsAccumulateAcrossPasses) {
  Dense layer(2, 2);
  std::mt19937_64 rng(1);
  layer.init(rng);
  Matrix x = random_matrix(2, 2, 5), dy = random_matrix(2, 2, 6), y;
  layer.forward(x, y);
  layer.backward_weight(dy);
  layer.backward_bias(dy);
  const std::vector<float> once_w = layer.weight_grad().data, once_b = layer.bias_grad().data;
  layer.backward_weight(dy);
  layer.backward_bias(dy);
  for (size_t i = 0; i < once_w.size(); ++i)
    EXPECT_FLOAT_EQ(layer.weight_grad().data[i], 2 * once_w[i]);
  for (size_t i = 0; i < once_b.size(); ++i)
    EXPECT_FLOAT_EQ(layer.bias_grad().data[i], 2 * once_b[i]);
}

TEST(LayersTest, ReluGradientMatchesFiniteDifferences) {
  // Inputs kept at least 0.1 away from the kink, so +-h never crosses it.
  Matrix x = random_matrix(4, 6, 21);
  for (float& v : x.data) v = v >= 0 ? v + 0.1f : v - 0.1f;
  Matrix r = random_matrix(4, 6, 22), y, dx;
  auto loss = [&] {
    relu_forward(x, y);
    double sum = 0;
    for (int64_t i = 0; i < y.count(); ++i) sum += static_cast<double>(y.data[i]) * r.data[i];
    return sum;
  };
  loss();
  relu_backward(y, r, dx);
  expect_matches_finite_differences(x.data, dx.data, loss, "relu dx");
}

TEST(LayersTest, SoftmaxCrossEntropyGradientMatchesFiniteDifferences) {
  Matrix logits = random_matrix(5, 7, 31, 2.0f), dlogits, scratch;
  const std::vector<int32_t> labels = {0, 6, 3, 3, 1};
  auto loss = [&] { return softmax_cross_entropy(logits, labels, scratch); };
  loss();
  softmax_cross_entropy(logits, labels, dlogits);
  expect_matches_finite_differences(logits.data, dlogits.data, loss, "dlogits");
}

TEST(LayersTest, SoftmaxCrossEntropyKnownValueAndStability) {
  Matrix logits(1, 3), d;
  logits.data = {1000.0f, 1000.0f, 1000.0f};  // exp would overflow without the shift
  EXPECT_NEAR(softmax_cross_entropy(logits, {2}, d), std::log(3.0), 1e-6);
  EXPECT_NEAR(d.data[0], 1.0 / 3, 1e-6);
  EXPECT_NEAR(d.data[2], 1.0 / 3 - 1, 1e-6);
  EXPECT_EQ(count_correct(logits, {0}), 1);  // ties go to the first index
}

TEST(LayersTest, MlpGradientsMatchFiniteDifferencesInReverseLayerOrder) {
  auto model_or = Mlp::create({6, 5, 4, 3}, 7);
  ASSERT_TRUE(model_or.ok());
  Mlp model = std::move(model_or).value();
  Matrix x = random_matrix(4, 6, 41);
  const std::vector<int32_t> labels = {0, 1, 2, 1};
  Matrix dlogits, scratch;
  auto loss = [&] { return softmax_cross_entropy(model.forward(x), labels, scratch); };
  softmax_cross_entropy(model.forward(x), labels, dlogits);
  model.zero_grad();
  std::vector<std::string> order;
  ASSERT_TRUE(model
                  .backward(dlogits,
                            [&](const std::string& name) {
                              order.push_back(name);
                              return Status::OK();
                            })
                  .ok());
  EXPECT_EQ(order, (std::vector<std::string>{"fc3.weight", "fc3.bias", "fc2.weight", "fc2.bias",
                                             "fc1.weight", "fc1.bias"}));
  for (const Parameter& p : model.parameters()) {
    std::vector<float> value(p.value, p.value + p.count);
    const std::vector<float> analytic(p.grad, p.grad + p.count);
    // Check through a copy that is written back before each loss evaluation.
    auto loss_through_copy = [&] {
      std::copy(value.begin(), value.end(), p.value);
      return loss();
    };
    // A small step, so that no hidden unit's pre-activation crosses ReLU's kink.
    expect_matches_finite_differences(value, analytic, loss_through_copy, p.name.c_str(), 1e-3f);
    std::copy(value.begin(), value.end(), p.value);
  }
}

TEST(LayersTest, MlpBackwardStopsAtTheHooksError) {
  Mlp model = Mlp::create({3, 2}, 1).value();
  Matrix x = random_matrix(2, 3, 1), d;
  softmax_cross_entropy(model.forward(x), {0, 1}, d);
  Status s = model.backward(d, [](const std::string& name) {
    return Status::failed_precondition("hook refused " + name);
  });
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("fc1.weight"), std::string::npos) << s.to_string();
}

TEST(LayersTest, MlpRejectsBadLayerSizes) {
  EXPECT_EQ(Mlp::create({4}, 1).status().code(), StatusCode::kInvalidArgument);
  Status s = Mlp::create({4, 0, 2}, 1).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("layer_sizes[1] is 0"), std::string::npos) << s.to_string();
}

}  // namespace
}  // namespace trainer
}  // namespace hora
