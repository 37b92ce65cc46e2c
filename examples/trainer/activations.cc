// ReLU and softmax cross-entropy, written out per row.
#include "examples/trainer/activations.h"

#include <algorithm>
#include <cmath>

#include "hora/logging.h"

namespace hora {
namespace trainer {

void relu_forward(const Matrix& x, Matrix& y) {
  y.resize(x.rows, x.cols);
  for (int64_t i = 0; i < x.count(); ++i) y.data[i] = std::max(x.data[i], 0.0f);
}

void relu_backward(const Matrix& y, const Matrix& dy, Matrix& dx) {
  HORA_CHECK_EQ(y.count(), dy.count());
  dx.resize(dy.rows, dy.cols);
  for (int64_t i = 0; i < dy.count(); ++i) dx.data[i] = y.data[i] > 0.0f ? dy.data[i] : 0.0f;
}

double softmax_cross_entropy(const Matrix& logits, const std::vector<int32_t>& labels,
                             Matrix& dlogits) {
  HORA_CHECK_EQ(static_cast<int64_t>(labels.size()), logits.rows);
  dlogits.resize(logits.rows, logits.cols);
  const float inv_rows = logits.rows > 0 ? 1.0f / static_cast<float>(logits.rows) : 0.0f;
  double total = 0.0;
  for (int64_t r = 0; r < logits.rows; ++r) {
    const int32_t label = labels[r];
    HORA_CHECK(label >= 0 && label < logits.cols);
    const float* z = logits.row(r);
    float* g = dlogits.row(r);
    const float shift = *std::max_element(z, z + logits.cols);
    double sum = 0.0;
    for (int64_t c = 0; c < logits.cols; ++c) {
      g[c] = std::exp(z[c] - shift);
      sum += g[c];
    }
    const float inv_sum = static_cast<float>(1.0 / sum);
    for (int64_t c = 0; c < logits.cols; ++c) g[c] = g[c] * inv_sum;
    total += -(static_cast<double>(z[label] - shift) - std::log(sum));
    g[label] -= 1.0f;
    for (int64_t c = 0; c < logits.cols; ++c) g[c] *= inv_rows;
  }
  return logits.rows > 0 ? total / static_cast<double>(logits.rows) : 0.0;
}

int64_t count_correct(const Matrix& logits, const std::vector<int32_t>& labels) {
  int64_t correct = 0;
  for (int64_t r = 0; r < logits.rows; ++r) {
    const float* z = logits.row(r);
    const int64_t best = std::max_element(z, z + logits.cols) - z;
    if (best == labels[r]) ++correct;
  }
  return correct;
}

}  // namespace trainer
}  // namespace hora
