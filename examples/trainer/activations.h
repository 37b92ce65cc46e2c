// The MLP's nonlinearity and loss: ReLU, and softmax cross-entropy over integer labels
// (numerically stable: logits are shifted by their row maximum before exp).
// Pure functions over Matrix; thread-safe on distinct objects.
#pragma once

#include <cstdint>
#include <vector>

#include "examples/trainer/matrix.h"

namespace hora {
namespace trainer {

// y = max(x, 0). y may be x.
void relu_forward(const Matrix& x, Matrix& y);
// dx = dy where the forward output y > 0, else 0. dx may be dy.
void relu_backward(const Matrix& y, const Matrix& dy, Matrix& dx);

// Mean cross-entropy of softmax(logits) against labels over the batch (rows); also writes
// dlogits = (softmax - onehot) / rows, the gradient of that mean. REQUIRES: labels.size() ==
// logits.rows and every label in [0, logits.cols) (checked).
double softmax_cross_entropy(const Matrix& logits, const std::vector<int32_t>& labels,
                             Matrix& dlogits);
// Rows whose largest logit is at the label (ties: the first index).
int64_t count_correct(const Matrix& logits, const std::vector<int32_t>& labels);

}  // namespace trainer
}  // namespace hora
