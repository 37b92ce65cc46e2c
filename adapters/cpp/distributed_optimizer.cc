// DistributedOptimizer: the Optimizer interface over a GradientReducer.
#include "hora/distributed_optimizer.h"

#include <utility>

namespace hora {

StatusOr<std::unique_ptr<DistributedOptimizer>> DistributedOptimizer::create(
    Optimizer& inner, DistributedOptions options) {
  const std::vector<Parameter>& params = inner.parameters();
  std::vector<std::string> names;
  std::vector<TensorView> grads;
  for (const Parameter& p : params) {
    names.push_back(p.name);
    HORA_ASSIGN_OR_RETURN(TensorView grad, TensorView::flat(p.grad, DataType::kFloat32, p.count));
    grads.push_back(grad);
  }
  StatusOr<std::unique_ptr<GradientReducer>> reducer = GradientReducer::create(
      std::move(names), static_cast<const GradientReducerOptions&>(options));
  if (!reducer.ok()) return reducer.status().with_context("DistributedOptimizer::create");
  return std::unique_ptr<DistributedOptimizer>(new DistributedOptimizer(
      inner, std::move(options), std::move(reducer).value(), std::move(grads)));
}

DistributedOptimizer::DistributedOptimizer(Optimizer& inner, DistributedOptions options,
                                           std::unique_ptr<GradientReducer> reducer,
                                           std::vector<TensorView> grads)
    : inner_(inner),
      options_(std::move(options)),
      name_(std::string("distributed(") + inner.name() + ")"),
      reducer_(std::move(reducer)),
      grads_(std::move(grads)) {}

// The reducer's destructor waits for whatever is still in flight.
DistributedOptimizer::~DistributedOptimizer() = default;

std::function<Status(const std::string&)> DistributedOptimizer::hook() {
  return [this](const std::string& name) { return gradient_ready(name); };
}

Status DistributedOptimizer::gradient_ready(const std::string& name) {
  HORA_ASSIGN_OR_RETURN(size_t index, reducer_->index_of(name));
  return reducer_->gradient_ready(index, grads_[index]);
}

Status DistributedOptimizer::synchronize() {
  Status first_error;
  for (size_t index : reducer_->unreported()) {
    Status s = reducer_->flush(index, grads_[index]);
    if (!s.ok() && first_error.ok()) first_error = s;
  }
  Status s = reducer_->synchronize();
  return first_error.ok() ? s : first_error;
}

Status DistributedOptimizer::zero_grad() {
  if (reducer_->has_pending())
    return Status::failed_precondition(
        "DistributedOptimizer: zero_grad() called after backward but before step() or "
        "synchronize() (gradients are accumulated or being reduced); call zero_grad before "
        "backward");
  return inner_.zero_grad();
}

Status DistributedOptimizer::step() {
  HORA_RETURN_IF_ERROR(synchronize());
  return inner_.step();
}

}  // namespace hora
