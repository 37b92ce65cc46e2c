// Helpers over a list of Parameter views, shared by the trainer's optimizers.
#pragma once

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

}  // namespace trainer
}  // namespace hora
