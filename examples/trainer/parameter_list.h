// Helpers over a list of Parameter views, shared by the trainer's optimizers, and
// ParameterOptimizer, their common base.
#pragma once

#include <utility>
#include <vector>

#include "hora/optimizer.h"
#include "hora/status.h"

namespace hora {
namespace trainer {

// OK when every parameter has a non-empty unique name, non-null buffers (for count > 0) and
// count >= 0; else kInvalidArgument naming the parameter (and `who`, e.g. "Sgd").
Status validate_parameters(const std::vector<Parameter>& params, const char* who);
// Sets every gradient to zero.
void zero_gradients(const std::vector<Parameter>& params);

// An Optimizer over the parameters given at construction: it holds them, lists them and
// zeroes their gradients; a subclass adds name(), step() and state().
class ParameterOptimizer : public Optimizer {
 public:
  const std::vector<Parameter>& parameters() const override { return params_; }
  Status zero_grad() override {
    zero_gradients(params_);
    return Status::OK();
  }

 protected:
  explicit ParameterOptimizer(std::vector<Parameter> params) : params_(std::move(params)) {}

  std::vector<Parameter> params_;
};

}  // namespace trainer
}  // namespace hora
