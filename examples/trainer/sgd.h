// Sgd: stochastic gradient descent with momentum and weight decay, with PyTorch's update
// rule (dampening 0): g' = g + weight_decay * p; buf = momentum * buf + g'; p -= lr * buf.
// (buf starts at zero, so the first step uses buf = g', as PyTorch does.)
//
// State: one "momentum/<parameter>" buffer per parameter, allocated at creation.
// Threads: one training thread.
#pragma once

#include <memory>
#include <vector>

#include "examples/trainer/parameter_list.h"
#include "hora/optimizer.h"
#include "hora/status.h"

namespace hora {
namespace trainer {

struct SgdOptions {
  double lr = 0.05;
  double momentum = 0.9;
  double weight_decay = 0.0;
};

class Sgd : public ParameterOptimizer {
 public:
  // Fails with kInvalidArgument on lr <= 0, momentum outside [0, 1), weight_decay < 0, or
  // parameters with empty or duplicate names.
  static StatusOr<std::unique_ptr<Sgd>> create(std::vector<Parameter> params, SgdOptions options);

  const char* name() const override { return "sgd"; }
  Status step() override;
  std::vector<StateTensor> state() override;

 private:
  Sgd(std::vector<Parameter> params, SgdOptions options);

  SgdOptions options_;
  std::vector<std::vector<float>> momentum_;  // one per parameter
};

}  // namespace trainer
}  // namespace hora
