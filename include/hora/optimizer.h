// Optimizer: the small interface a C++ training loop's optimizer offers, and the one
// hora::DistributedOptimizer (distributed_optimizer.h) wraps. Header only, no hora runtime.
//
// An optimizer updates named parameters from their gradients. A Parameter is a view: the
// model owns the value and gradient buffers, and they must outlive the optimizer. Gradients
// accumulate (backward adds into `grad`); zero_grad clears them, step applies them.
//
// state() exposes the optimizer's own buffers (momentum, Adam moments, the step count) as
// named float32 views in a fixed order that depends only on the parameters, so that two
// optimizers built over the same model have the same state layout: that is what lets the
// state be saved, loaded and broadcast without the optimizer's help.
//
// Threads: one training thread calls every method; nothing here is thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hora/status.h"

namespace hora {

// One named parameter: `count` float32 values and as many gradient values.
struct Parameter {
  std::string name;
  float* value = nullptr;
  float* grad = nullptr;
  int64_t count = 0;
};

// One named buffer of optimizer state (float32).
struct StateTensor {
  std::string name;
  float* data = nullptr;
  int64_t count = 0;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // "sgd", "adam", ...
  virtual const char* name() const = 0;
  // The parameters, in the order given at construction.
  virtual const std::vector<Parameter>& parameters() const = 0;
  // Sets every parameter's gradient to zero. Fails only in wrappers that detect misuse.
  virtual Status zero_grad() = 0;
  // Applies one update from the gradients now in `grad`. Does not clear them.
  virtual Status step() = 0;
  // Views of the optimizer state; valid until the optimizer is destroyed. The buffers exist
  // from construction (no lazy allocation), so the layout never changes.
  virtual std::vector<StateTensor> state() = 0;
};

}  // namespace hora
