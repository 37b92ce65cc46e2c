// Adam (Kingma and Ba), with PyTorch's update rule: with t the step count after increment,
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
//   p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
//
// State: "adam.step" (the count, one float: exact up to 2^24 steps), then
// "exp_avg/<parameter>" and "exp_avg_sq/<parameter>" per parameter, allocated at creation.
// Threads: one training thread.
#pragma once

#include <memory>
#include <vector>

#include "examples/trainer/parameter_list.h"
#include "hora/optimizer.h"
#include "hora/status.h"

namespace hora {
namespace trainer {

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

class Adam : public ParameterOptimizer {
 public:
  // Fails with kInvalidArgument on lr <= 0, betas outside [0, 1), eps <= 0, or parameters
  // with empty or duplicate names.
  static StatusOr<std::unique_ptr<Adam>> create(std::vector<Parameter> params, AdamOptions options);

  const char* name() const override { return "adam"; }
  Status step() override;
  std::vector<StateTensor> state() override;

 private:
  Adam(std::vector<Parameter> params, AdamOptions options);

  AdamOptions options_;
  float step_count_ = 0.0f;
  std::vector<std::vector<float>> exp_avg_, exp_avg_sq_;  // one each per parameter
};

}  // namespace trainer
}  // namespace hora
