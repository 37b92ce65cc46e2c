// Adam: validation, the bias-corrected update, and its state views.
#include "examples/trainer/adam.h"

#include <cmath>
#include <utility>

#include "examples/trainer/parameter_list.h"

namespace hora {
namespace trainer {

StatusOr<std::unique_ptr<Adam>> Adam::create(std::vector<Parameter> params, AdamOptions options) {
  if (!(options.lr > 0.0))
    return Status::invalid_argument("Adam: lr is " + std::to_string(options.lr) + ", expected > 0");
  if (!(options.beta1 >= 0.0 && options.beta1 < 1.0) ||
      !(options.beta2 >= 0.0 && options.beta2 < 1.0))
    return Status::invalid_argument("Adam: betas are (" + std::to_string(options.beta1) + ", " +
                                    std::to_string(options.beta2) + "), expected each in [0, 1)");
  if (!(options.eps > 0.0))
    return Status::invalid_argument("Adam: eps is " + std::to_string(options.eps) +
                                    ", expected > 0");
  HORA_RETURN_IF_ERROR(validate_parameters(params, "Adam"));
  return std::unique_ptr<Adam>(new Adam(std::move(params), options));
}

Adam::Adam(std::vector<Parameter> params, AdamOptions options)
    : ParameterOptimizer(std::move(params)), options_(options) {
  for (const Parameter& p : params_) {
    exp_avg_.emplace_back(p.count, 0.0f);
    exp_avg_sq_.emplace_back(p.count, 0.0f);
  }
}

Status Adam::step() {
  step_count_ += 1.0f;
  const double t = step_count_;
  // 1 - beta in double first: 1.0f - 0.999f loses four digits.
  const float b1 = static_cast<float>(options_.beta1), b2 = static_cast<float>(options_.beta2);
  const float one_minus_b1 = static_cast<float>(1.0 - options_.beta1);
  const float one_minus_b2 = static_cast<float>(1.0 - options_.beta2);
  const float correction1 = static_cast<float>(1.0 - std::pow(options_.beta1, t));
  const float correction2 = static_cast<float>(1.0 - std::pow(options_.beta2, t));
  const float step_size = static_cast<float>(options_.lr) / correction1;
  const float sqrt_c2 = std::sqrt(correction2);
  const float eps = static_cast<float>(options_.eps);
  for (size_t i = 0; i < params_.size(); ++i) {
    const Parameter& p = params_[i];
    float* m = exp_avg_[i].data();
    float* v = exp_avg_sq_[i].data();
    for (int64_t j = 0; j < p.count; ++j) {
      const float g = p.grad[j];
      m[j] = b1 * m[j] + one_minus_b1 * g;
      v[j] = b2 * v[j] + one_minus_b2 * g * g;
      p.value[j] -= step_size * m[j] / (std::sqrt(v[j]) / sqrt_c2 + eps);
    }
  }
  return Status::OK();
}

std::vector<StateTensor> Adam::state() {
  std::vector<StateTensor> views;
  views.push_back({"adam.step", &step_count_, 1});
  for (size_t i = 0; i < params_.size(); ++i) {
    views.push_back({"exp_avg/" + params_[i].name, exp_avg_[i].data(), params_[i].count});
    views.push_back({"exp_avg_sq/" + params_[i].name, exp_avg_sq_[i].data(), params_[i].count});
  }
  return views;
}

}  // namespace trainer
}  // namespace hora
