// Mlp: forward through Dense + ReLU, backward in reverse with a per-parameter ready callback.
#include "examples/trainer/mlp.h"

#include <random>
#include <utility>

#include "examples/trainer/activations.h"

namespace hora {
namespace trainer {

StatusOr<Mlp> Mlp::create(const std::vector<int64_t>& layer_sizes, uint64_t seed) {
  if (layer_sizes.size() < 2)
    return Status::invalid_argument("Mlp: layer_sizes has " + std::to_string(layer_sizes.size()) +
                                    " entries, expected at least 2 (inputs and classes)");
  for (size_t i = 0; i < layer_sizes.size(); ++i)
    if (layer_sizes[i] <= 0)
      return Status::invalid_argument("Mlp: layer_sizes[" + std::to_string(i) + "] is " +
                                      std::to_string(layer_sizes[i]) + ", expected > 0");
  return Mlp(layer_sizes, seed);
}

Mlp::Mlp(std::vector<int64_t> layer_sizes, uint64_t seed) : layer_sizes_(std::move(layer_sizes)) {
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i + 1 < layer_sizes_.size(); ++i) {
    layers_.emplace_back(layer_sizes_[i], layer_sizes_[i + 1]);
    layers_.back().init(rng);
  }
  acts_.resize(layers_.size());
}

const Matrix& Mlp::forward(const Matrix& x) {
  const Matrix* in = &x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const bool last = i + 1 == layers_.size();
    Matrix& out = last ? logits_ : acts_[i + 1];
    layers_[i].forward(*in, out);
    if (!last) relu_forward(out, out);
    in = &out;
  }
  return logits_;
}

Status Mlp::backward(const Matrix& dlogits, const GradientReadyFn& on_ready) {
  const Matrix* dy = &dlogits;
  for (size_t k = layers_.size(); k-- > 0;) {
    Dense& layer = layers_[k];
    const std::string prefix = "fc" + std::to_string(k + 1);
    layer.backward_weight(*dy);
    if (on_ready) HORA_RETURN_IF_ERROR(on_ready(prefix + ".weight"));
    layer.backward_bias(*dy);
    if (on_ready) HORA_RETURN_IF_ERROR(on_ready(prefix + ".bias"));
    if (k == 0) break;  // no gradient wanted for the data
    Matrix& dx = dy == &grad_a_ ? grad_b_ : grad_a_;
    layer.backward_input(*dy, dx);
    relu_backward(acts_[k], dx, dx);
    dy = &dx;
  }
  return Status::OK();
}

std::vector<Parameter> Mlp::parameters() {
  std::vector<Parameter> params;
  for (size_t i = 0; i < layers_.size(); ++i) {
    Dense& layer = layers_[i];
    const std::string prefix = "fc" + std::to_string(i + 1);
    params.push_back({prefix + ".weight", layer.weight().data.data(),
                      layer.weight_grad().data.data(), layer.weight().count()});
    params.push_back({prefix + ".bias", layer.bias().data.data(), layer.bias_grad().data.data(),
                      layer.bias().count()});
  }
  return params;
}

void Mlp::zero_grad() {
  for (Dense& layer : layers_) {
    layer.weight_grad().fill(0.0f);
    layer.bias_grad().fill(0.0f);
  }
}

int64_t Mlp::parameter_count() const {
  int64_t total = 0;
  for (const Dense& layer : layers_) total += layer.weight().count() + layer.bias().count();
  return total;
}

}  // namespace trainer
}  // namespace hora
