// Dense layer: forward and the three parts of backward, each one gemm or one pass.
#include "examples/trainer/dense.h"

#include <cmath>

#include "hora/logging.h"

namespace hora {
namespace trainer {

Dense::Dense(int64_t in_features, int64_t out_features)
    : weight_(in_features, out_features),
      bias_(1, out_features),
      weight_grad_(in_features, out_features),
      bias_grad_(1, out_features) {}

void Dense::init(std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, std::sqrt(2.0f / static_cast<float>(in_features())));
  for (float& w : weight_.data) w = normal(rng);
  bias_.fill(0.0f);
}

void Dense::forward(const Matrix& x, Matrix& y) {
  HORA_CHECK_EQ(x.cols, in_features());
  input_ = &x;
  y.resize(x.rows, out_features());
  for (int64_t r = 0; r < y.rows; ++r) {
    float* out = y.row(r);
    for (int64_t c = 0; c < y.cols; ++c) out[c] = bias_.data[c];
  }
  gemm(Transpose::kNo, Transpose::kNo, 1.0f, x, weight_, 1.0f, y);
}

void Dense::backward_weight(const Matrix& dy) {
  HORA_CHECK(input_ != nullptr);
  HORA_CHECK_EQ(dy.rows, input_->rows);
  gemm(Transpose::kYes, Transpose::kNo, 1.0f, *input_, dy, 1.0f, weight_grad_);
}

void Dense::backward_bias(const Matrix& dy) {
  HORA_CHECK_EQ(dy.cols, out_features());
  float* db = bias_grad_.data.data();
  for (int64_t r = 0; r < dy.rows; ++r) {
    const float* g = dy.row(r);
    for (int64_t c = 0; c < dy.cols; ++c) db[c] += g[c];
  }
}

void Dense::backward_input(const Matrix& dy, Matrix& dx) const {
  dx.resize(dy.rows, in_features());
  gemm(Transpose::kNo, Transpose::kYes, 1.0f, dy, weight_, 0.0f, dx);
}

}  // namespace trainer
}  // namespace hora
