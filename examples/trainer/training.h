// The pieces of a training loop that every driver shares (train_mlp, the tests, the
// benchmark): one forward + backward on a batch, and held-out evaluation.
// One thread per Mlp.
#pragma once

#include <cstdint>
#include <vector>

#include "examples/trainer/dataset.h"
#include "examples/trainer/matrix.h"
#include "examples/trainer/mlp.h"
#include "hora/status.h"

namespace hora {
namespace trainer {

// Scratch a training loop keeps across steps, so steps allocate nothing after the first.
struct StepBuffers {
  Matrix x;
  std::vector<int32_t> labels;
  Matrix dlogits;
};

// Forward, loss and backward on (buffers.x, buffers.labels); gradients are added into the
// model's grad buffers and on_ready fires per parameter. Returns the batch's mean loss, or
// the first error on_ready returned.
StatusOr<double> forward_backward(Mlp& model, StepBuffers& buffers,
                                  const GradientReadyFn& on_ready);

// How many of rows [begin, end) of `data` the model classifies correctly, in batches of
// `batch` rows.
int64_t count_correct_rows(Mlp& model, const Dataset& data, int64_t begin, int64_t end,
                           int64_t batch = 512);

}  // namespace trainer
}  // namespace hora
