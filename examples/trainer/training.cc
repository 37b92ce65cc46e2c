// forward_backward and count_correct_rows.
#include "examples/trainer/training.h"

#include <algorithm>
#include <numeric>

#include "examples/trainer/activations.h"

namespace hora {
namespace trainer {

StatusOr<double> forward_backward(Mlp& model, StepBuffers& buffers,
                                  const GradientReadyFn& on_ready) {
  const Matrix& logits = model.forward(buffers.x);
  const double loss = softmax_cross_entropy(logits, buffers.labels, buffers.dlogits);
  HORA_RETURN_IF_ERROR(model.backward(buffers.dlogits, on_ready));
  return loss;
}

int64_t count_correct_rows(Mlp& model, const Dataset& data, int64_t begin, int64_t end,
                           int64_t batch) {
  int64_t correct = 0;
  Matrix x;
  std::vector<int32_t> labels;
  std::vector<int64_t> indices;
  for (int64_t first = begin; first < end; first += batch) {
    const int64_t last = std::min(end, first + batch);
    indices.resize(last - first);
    std::iota(indices.begin(), indices.end(), first);
    gather_rows(data, indices, x, labels);
    correct += count_correct(model.forward(x), labels);
  }
  return correct;
}

}  // namespace trainer
}  // namespace hora
