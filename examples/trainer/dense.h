// Dense: a fully connected layer y = x W + b, with W [in, out] and b [1, out], owning its
// parameters and their (accumulating) gradients. forward keeps a pointer to its input for
// backward, so the input must stay alive and unchanged until backward returned.
//
// Threads: one training thread.
#pragma once

#include <cstdint>
#include <random>

#include "examples/trainer/matrix.h"

namespace hora {
namespace trainer {

class Dense {
 public:
  Dense(int64_t in_features, int64_t out_features);

  // He-normal weights (std = sqrt(2 / in)) and zero bias from `rng`.
  void init(std::mt19937_64& rng);

  // y = x W + b. REQUIRES: x.cols == in_features(). Resizes y to [x.rows, out].
  void forward(const Matrix& x, Matrix& y);
  // Adds this batch's dL/dW = x^T dy to weight_grad (x from the last forward).
  void backward_weight(const Matrix& dy);
  // Adds dL/db = column sums of dy to bias_grad.
  void backward_bias(const Matrix& dy);
  // dx = dy W^T. Resizes dx to [dy.rows, in].
  void backward_input(const Matrix& dy, Matrix& dx) const;

  int64_t in_features() const { return weight_.rows; }
  int64_t out_features() const { return weight_.cols; }
  Matrix& weight() { return weight_; }
  Matrix& bias() { return bias_; }
  Matrix& weight_grad() { return weight_grad_; }
  Matrix& bias_grad() { return bias_grad_; }
  const Matrix& weight() const { return weight_; }
  const Matrix& bias() const { return bias_; }

 private:
  Matrix weight_, bias_, weight_grad_, bias_grad_;
  const Matrix* input_ = nullptr;  // the last forward's x; not owned
};

}  // namespace trainer
}  // namespace hora
