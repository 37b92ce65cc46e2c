// DistributedOptimizer: wraps any Optimizer (optimizer.h) so that a single-process training
// loop trains data-parallel on every rank of a hora job, as Horovod's DistributedOptimizer.
//
//   auto dist = hora::DistributedOptimizer::create(*sgd, options).value();
//   hora::broadcast_parameters(dist->parameters(), 0);        // broadcast.h
//   for (...) {
//     dist->zero_grad();
//     model.backward(dlogits, dist->hook());   // each ready gradient starts its allreduce
//     dist->step();                            // waits for them, then the inner step
//   }
//
// A thin layer over hora::GradientReducer (hora/gradient_reducer.h), which does the
// bookkeeping every framework adapter shares. Backward calls the hook once per parameter as
// its gradient completes; the reducer enqueues that gradient's allreduce at once, so
// communication runs on the engine thread while backward computes the layers below. step()
// flushes the parameters whose hook never fired (as Horovod does for unused parameters, so
// every rank always runs the same collectives), waits for every handle (HORA_TIMEOUT_S each),
// then calls the inner optimizer's step. Compression is the engine's: the gradients stay
// float32 here.
//
// Misuse is an error (kFailedPrecondition / kInvalidArgument), never a hang: empty or
// duplicate parameter names (at create), a hook for an unknown name, more backward passes
// than backward_passes_per_step before a step, zero_grad between backward and step.
//
// The wrapped optimizer and the parameter buffers must outlive this object; a gradient must
// not be touched between its hook and the end of step(). Threads: the training thread only.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hora/compression.h"
#include "hora/gradient_reducer.h"
#include "hora/hora.h"
#include "hora/optimizer.h"
#include "hora/reduce_op.h"
#include "hora/status.h"
#include "hora/tensor_view.h"

namespace hora {

// The gradient reducer's options (hora/gradient_reducer.h), every one of them honoured:
// groups index the inner optimizer's parameters(). GradsAndVarsOptimizer takes them too
// (grads_and_vars_optimizer.h says which it ignores).
struct DistributedOptions : GradientReducerOptions {};

class DistributedOptimizer : public Optimizer {
 public:
  // Fails with kInvalidArgument on a parameter with an empty or duplicate name, op other than
  // average/sum, backward_passes_per_step < 1, gradient_predivide_factor <= 0, a predivide
  // factor other than 1 with op sum, or a group index out of range or repeated. Does not need
  // hora::init (step does).
  static StatusOr<std::unique_ptr<DistributedOptimizer>> create(Optimizer& inner,
                                                                DistributedOptions options = {});
  ~DistributedOptimizer() override;
  DistributedOptimizer(const DistributedOptimizer&) = delete;
  DistributedOptimizer& operator=(const DistributedOptimizer&) = delete;

  // The hook: the gradient of parameter `name` is complete for this backward pass. On the
  // k-th pass (k = backward_passes_per_step) it enqueues the allreduce and returns at once.
  Status gradient_ready(const std::string& name);
  // gradient_ready bound to this object, to hand to backward.
  std::function<Status(const std::string&)> hook();

  // Enqueues what is not yet enqueued (unused parameters with their current gradient) and
  // waits for every handle: afterwards each grad holds the reduced gradient. Waits at most
  // HORA_TIMEOUT_S per handle; returns the first error (naming the tensor) after all
  // handles completed or timed out. A handle that timed out stays pending (its buffer may
  // still be written): a later synchronize waits for it again, and so does the destructor.
  Status synchronize();

  const char* name() const override { return name_.c_str(); }
  const std::vector<Parameter>& parameters() const override { return inner_.parameters(); }
  // kFailedPrecondition when a backward pass happened since the last step.
  Status zero_grad() override;
  // synchronize(), then the inner optimizer's step.
  Status step() override;
  std::vector<StateTensor> state() override { return inner_.state(); }

  const DistributedOptions& options() const { return options_; }

 private:
  DistributedOptimizer(Optimizer& inner, DistributedOptions options,
                       std::unique_ptr<GradientReducer> reducer, std::vector<TensorView> grads);

  Optimizer& inner_;
  DistributedOptions options_;
  std::string name_;
  std::unique_ptr<GradientReducer> reducer_;  // one parameter per inner parameter, in order
  std::vector<TensorView> grads_;             // each parameter's gradient buffer, float32
};

}  // namespace hora
