// GradsAndVarsOptimizer: TensorFlow's optimizer shape for a C++ training loop, beside
// DistributedOptimizer's per-parameter hooks (distributed_optimizer.h). Backward runs without
// hooks; the step's gradients are then a list of (gradient, variable) pairs, reduced as ONE
// grouped allreduce (fused as a unit), then applied by the wrapped optimizer:
//
//   auto opt = hora::GradsAndVarsOptimizer::create(*adam, options).value();
//   trainer::forward_backward(model, batch, nullptr);        // gradients into each grad
//   opt->apply_gradients(opt->compute_gradients());         // reduce the list, then apply
//
// It is an Optimizer too (step() applies the full list), so broadcast_optimizer_state and
// the training loops take it like any other.
//
// Built on hora::GradientReducer (hora/gradient_reducer.h), the bookkeeping every adapter
// shares: one reducer per distinct set of variables applied, whose single group is the set.
// backward_passes_per_step k: the first k - 1 calls of apply_gradients only count (the
// gradients keep accumulating in their buffers, as backward adds into them); the k-th reduces
// and applies; the pairs must then name the variables' own gradient buffers (where backward
// accumulates). Variables left out of the list are not reduced and get a zero gradient for
// the step (the wrapped Optimizer's step covers every parameter, so with momentum or Adam
// they still move by their state); every rank must list the same variables.
//
// Misuse is an error, never a hang: a pair whose variable is not one of the inner
// optimizer's parameters, a variable listed twice, a null gradient, zero_grad between an
// apply_gradients that counted a pass and the one that applies.
// The wrapped optimizer and the buffers must outlive this object. Threads: the training
// thread only.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hora/distributed_optimizer.h"
#include "hora/gradient_reducer.h"
#include "hora/optimizer.h"
#include "hora/status.h"

namespace hora {

// One (gradient, variable) pair: `grad` holds var's count float32 values. It may be the
// variable's own grad buffer or any other buffer (then it is copied into var's buffer after
// the reduction). The reduction happens in place in `grad`.
struct GradAndVar {
  float* grad = nullptr;
  std::string var;  // the parameter's name
};

class GradsAndVarsOptimizer : public Optimizer {
 public:
  // Fails like DistributedOptimizer::create (names, op, factors); overlap_backward and groups
  // are ignored (the list is reduced after backward, as one group, by construction).
  static StatusOr<std::unique_ptr<GradsAndVarsOptimizer>> create(Optimizer& inner,
                                                                 DistributedOptions options = {});
  ~GradsAndVarsOptimizer() override;
  GradsAndVarsOptimizer(const GradsAndVarsOptimizer&) = delete;
  GradsAndVarsOptimizer& operator=(const GradsAndVarsOptimizer&) = delete;

  // Every parameter with its own gradient buffer, in the inner optimizer's order.
  std::vector<GradAndVar> compute_gradients() const;
  // Reduces the listed gradients as one grouped allreduce (waiting at most HORA_TIMEOUT_S),
  // then runs the inner step; on the first k - 1 passes only counts (see above). Returns the
  // first error (naming the tensor); on error no step runs.
  Status apply_gradients(const std::vector<GradAndVar>& grads_and_vars);

  const char* name() const override { return name_.c_str(); }
  const std::vector<Parameter>& parameters() const override { return inner_.parameters(); }
  // kFailedPrecondition while passes are counted but not yet applied.
  Status zero_grad() override;
  // apply_gradients(compute_gradients()).
  Status step() override { return apply_gradients(compute_gradients()); }
  std::vector<StateTensor> state() override { return inner_.state(); }

 private:
  GradsAndVarsOptimizer(Optimizer& inner, DistributedOptions options,
                        std::map<std::string, size_t> index);
  // The reducer whose single group is `members` (parameter indices, ascending).
  StatusOr<GradientReducer*> reducer_for(const std::vector<size_t>& members);

  Optimizer& inner_;
  const DistributedOptions options_;
  const std::string name_;
  const std::map<std::string, size_t> index_;  // parameter name -> index
  std::map<std::vector<size_t>, std::unique_ptr<GradientReducer>> reducers_;
  int passes_ = 0;  // apply_gradients calls counted since the last applied step
};

}  // namespace hora
