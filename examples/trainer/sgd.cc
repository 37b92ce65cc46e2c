// Sgd: validation, the momentum update, and its state views.
#include "examples/trainer/sgd.h"

#include <utility>

#include "examples/trainer/parameter_list.h"

namespace hora {
namespace trainer {

StatusOr<std::unique_ptr<Sgd>> Sgd::create(std::vector<Parameter> params, SgdOptions options) {
  if (!(options.lr > 0.0))
    return Status::invalid_argument("Sgd: lr is " + std::to_string(options.lr) + ", expected > 0");
  if (!(options.momentum >= 0.0 && options.momentum < 1.0))
    return Status::invalid_argument("Sgd: momentum is " + std::to_string(options.momentum) +
                                    ", expected in [0, 1)");
  if (!(options.weight_decay >= 0.0))
    return Status::invalid_argument("Sgd: weight_decay is " + std::to_string(options.weight_decay) +
                                    ", expected >= 0");
  HORA_RETURN_IF_ERROR(validate_parameters(params, "Sgd"));
  return std::unique_ptr<Sgd>(new Sgd(std::move(params), options));
}

Sgd::Sgd(std::vector<Parameter> params, SgdOptions options)
    : ParameterOptimizer(std::move(params)), options_(options) {
  for (const Parameter& p : params_) momentum_.emplace_back(p.count, 0.0f);
}

Status Sgd::step() {
  const float lr = static_cast<float>(options_.lr);
  const float mu = static_cast<float>(options_.momentum);
  const float wd = static_cast<float>(options_.weight_decay);
  for (size_t i = 0; i < params_.size(); ++i) {
    const Parameter& p = params_[i];
    float* buf = momentum_[i].data();
    for (int64_t j = 0; j < p.count; ++j) {
      const float g = p.grad[j] + wd * p.value[j];
      buf[j] = mu * buf[j] + g;
      p.value[j] -= lr * buf[j];
    }
  }
  return Status::OK();
}

std::vector<StateTensor> Sgd::state() {
  std::vector<StateTensor> views;
  for (size_t i = 0; i < params_.size(); ++i)
    views.push_back({"momentum/" + params_[i].name, momentum_[i].data(), params_[i].count});
  return views;
}

}  // namespace trainer
}  // namespace hora
