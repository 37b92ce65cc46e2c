// Mlp: a multi-layer perceptron, dense layers with ReLU between them and softmax
// cross-entropy on the last layer's logits. It owns its layers, their parameters and
// gradients, and the activations of the last forward (reused across steps: after the first
// step nothing is allocated).
//
// Backward runs layer by layer from the last to the first. As soon as a parameter's gradient
// is complete, the GradientReadyFn is called with its name, so a hook can start reducing it
// while backward goes on with the layers below (fc3.weight, fc3.bias, fc2.weight, ...).
//
// Threads: one training thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "examples/trainer/dense.h"
#include "examples/trainer/matrix.h"
#include "hora/optimizer.h"
#include "hora/status.h"

namespace hora {
namespace trainer {

// Called from backward once the named parameter's gradient is final for this pass. A
// non-OK Status stops backward and is returned from it.
using GradientReadyFn = std::function<Status(const std::string& name)>;

class Mlp {
 public:
  // layer_sizes = {inputs, hidden..., classes}: at least two entries, each > 0. Fails with
  // kInvalidArgument naming the bad entry.
  static StatusOr<Mlp> create(const std::vector<int64_t>& layer_sizes, uint64_t seed);

  // Runs every layer on x ([batch, inputs]) and returns the logits, valid until the next
  // forward. x must stay alive and unchanged until backward returned.
  const Matrix& forward(const Matrix& x);
  // Back-propagates dlogits (from softmax_cross_entropy on the last forward's logits), adding
  // every parameter's gradient into its grad buffer and calling on_ready (may be empty) for
  // each as it completes, in reverse layer order.
  Status backward(const Matrix& dlogits, const GradientReadyFn& on_ready);

  // Views of every parameter in forward order: fc1.weight, fc1.bias, fc2.weight, ...
  // Valid while this Mlp lives (and is not moved).
  std::vector<Parameter> parameters();
  void zero_grad();
  const std::vector<int64_t>& layer_sizes() const { return layer_sizes_; }
  int64_t parameter_count() const;

 private:
  Mlp(std::vector<int64_t> layer_sizes, uint64_t seed);

  std::vector<int64_t> layer_sizes_;
  std::vector<Dense> layers_;
  // acts_[i] is the input of layer i (acts_[0] is unused: the caller's x), after ReLU.
  std::vector<Matrix> acts_;
  Matrix logits_;
  Matrix grad_a_, grad_b_;  // ping-pong buffers for dL/d(activation)
};

}  // namespace trainer
}  // namespace hora
