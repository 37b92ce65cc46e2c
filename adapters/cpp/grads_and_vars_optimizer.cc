// GradsAndVarsOptimizer: one GradientReducer per set of variables, its group the whole set.
#include "hora/grads_and_vars_optimizer.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace hora {
namespace {

constexpr const char* kWho = "GradsAndVarsOptimizer: ";

// The options of a reducer of a set of variables: the user's op, compression, predivide
// factor and name prefix. Passes are counted and averaged here, so the reducer sees one pass
// per applied step; it reduces after backward; groups are the caller's to set.
GradientReducerOptions reducer_options(const DistributedOptions& options) {
  GradientReducerOptions o = options;
  o.backward_passes_per_step = 1;
  o.average_aggregated_gradients = false;
  o.overlap_backward = true;
  o.groups.clear();
  return o;
}

}  // namespace

StatusOr<std::unique_ptr<GradsAndVarsOptimizer>> GradsAndVarsOptimizer::create(
    Optimizer& inner, DistributedOptions options) {
  std::map<std::string, size_t> index;
  const std::vector<Parameter>& params = inner.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].name.empty())
      return Status::invalid_argument(std::string(kWho) + "parameter " + std::to_string(i) +
                                      " has an empty name");
    if (!index.emplace(params[i].name, i).second)
      return Status::invalid_argument(std::string(kWho) + "two parameters are named '" +
                                      params[i].name + "'");
  }
  // The reducer validates the remaining options; check them now rather than at first use.
  GradientReducerOptions probe = reducer_options(options);
  probe.backward_passes_per_step = options.backward_passes_per_step;
  StatusOr<std::unique_ptr<GradientReducer>> check =
      GradientReducer::create({"probe"}, std::move(probe));
  if (!check.ok()) return check.status().with_context("GradsAndVarsOptimizer::create");
  return std::unique_ptr<GradsAndVarsOptimizer>(
      new GradsAndVarsOptimizer(inner, std::move(options), std::move(index)));
}

GradsAndVarsOptimizer::GradsAndVarsOptimizer(Optimizer& inner, DistributedOptions options,
                                             std::map<std::string, size_t> index)
    : inner_(inner),
      options_(std::move(options)),
      name_(std::string("grads_and_vars(") + inner.name() + ")"),
      index_(std::move(index)) {}

// Each reducer's destructor waits for whatever it still has in flight.
GradsAndVarsOptimizer::~GradsAndVarsOptimizer() = default;

std::vector<GradAndVar> GradsAndVarsOptimizer::compute_gradients() const {
  std::vector<GradAndVar> out;
  for (const Parameter& p : inner_.parameters()) out.push_back(GradAndVar{p.grad, p.name});
  return out;
}

StatusOr<GradientReducer*> GradsAndVarsOptimizer::reducer_for(const std::vector<size_t>& members) {
  auto it = reducers_.find(members);
  if (it != reducers_.end()) return it->second.get();
  const std::vector<Parameter>& params = inner_.parameters();
  std::vector<std::string> names;
  names.reserve(members.size());
  for (size_t m : members) names.push_back(params[m].name);
  GradientReducerOptions o = reducer_options(options_);
  std::vector<size_t> all(members.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  o.groups = {all};
  HORA_ASSIGN_OR_RETURN(std::unique_ptr<GradientReducer> reducer,
                        GradientReducer::create(std::move(names), std::move(o)));
  return reducers_.emplace(members, std::move(reducer)).first->second.get();
}

Status GradsAndVarsOptimizer::apply_gradients(const std::vector<GradAndVar>& grads_and_vars) {
  const std::vector<Parameter>& params = inner_.parameters();
  // Resolve and check the whole list before anything is enqueued.
  std::vector<std::pair<size_t, float*>> pairs;
  for (const GradAndVar& gv : grads_and_vars) {
    auto it = index_.find(gv.var);
    if (it == index_.end())
      return Status::invalid_argument(std::string(kWho) + "variable '" + gv.var +
                                      "' is not a parameter of the wrapped optimizer");
    if (gv.grad == nullptr)
      return Status::invalid_argument(std::string(kWho) + "the gradient of '" + gv.var +
                                      "' is null");
    if (options_.backward_passes_per_step > 1 && gv.grad != params[it->second].grad)
      return Status::invalid_argument(
          std::string(kWho) + "with backward_passes_per_step " +
          std::to_string(options_.backward_passes_per_step) + " the gradient of '" + gv.var +
          "' must be its parameter's own grad buffer (where the passes accumulate)");
    pairs.emplace_back(it->second, gv.grad);
  }
  std::sort(pairs.begin(), pairs.end());
  for (size_t i = 1; i < pairs.size(); ++i)
    if (pairs[i].first == pairs[i - 1].first)
      return Status::invalid_argument(std::string(kWho) + "variable '" +
                                      params[pairs[i].first].name + "' is listed twice");

  if (++passes_ < options_.backward_passes_per_step) return Status::OK();
  passes_ = 0;

  std::vector<size_t> members;
  members.reserve(pairs.size());
  for (const auto& pair : pairs) members.push_back(pair.first);
  if (!members.empty()) {
    HORA_ASSIGN_OR_RETURN(GradientReducer * reducer, reducer_for(members));
    for (size_t i = 0; i < pairs.size(); ++i) {
      HORA_ASSIGN_OR_RETURN(TensorView view, TensorView::flat(pairs[i].second, DataType::kFloat32,
                                                              params[pairs[i].first].count));
      Status s = reducer->gradient_ready(i, view);
      if (!s.ok()) {
        (void)reducer->synchronize();  // buffers must not stay in the engine's hands
        return s;
      }
    }
    HORA_RETURN_IF_ERROR(reducer->synchronize());
  }

  // Averaging k passes is a scale of the reduced sum; unlisted variables get no update.
  const float scale = options_.average_aggregated_gradients && options_.backward_passes_per_step > 1
                          ? 1.0f / static_cast<float>(options_.backward_passes_per_step)
                          : 1.0f;
  std::vector<bool> listed(params.size(), false);
  for (const auto& pair : pairs) {
    const Parameter& p = params[pair.first];
    listed[pair.first] = true;
    if (pair.second != p.grad)
      std::memcpy(p.grad, pair.second, static_cast<size_t>(p.count) * sizeof(float));
    if (scale != 1.0f)
      for (int64_t j = 0; j < p.count; ++j) p.grad[j] *= scale;
  }
  for (size_t i = 0; i < params.size(); ++i)
    if (!listed[i]) std::fill(params[i].grad, params[i].grad + params[i].count, 0.0f);
  return inner_.step();
}

Status GradsAndVarsOptimizer::zero_grad() {
  if (passes_ > 0)
    return Status::failed_precondition(
        std::string(kWho) + "zero_grad() between backward passes of one step (" +
        std::to_string(passes_) + " of " + std::to_string(options_.backward_passes_per_step) +
        " counted); the gradients accumulate until the step that applies them");
  return inner_.zero_grad();
}

}  // namespace hora
