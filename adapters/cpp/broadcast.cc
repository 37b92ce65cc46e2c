// broadcast_parameters / broadcast_optimizer_state (enqueue all, then wait all) and metrics.
#include "hora/broadcast.h"

#include <utility>

#include "hora/hora.h"

namespace hora {
namespace {

Status check_root(int root, const char* who, int process_set) {
  if (!is_initialized())
    return Status::failed_precondition(std::string(who) +
                                       ": hora is not initialised (call "
                                       "hora::init first)");
  if (process_set != kGlobalProcessSet) return Status::OK();  // broadcast_async checks it
  if (root < 0 || root >= size())
    return Status::invalid_argument(std::string(who) + ": root " + std::to_string(root) +
                                    " is not a rank of this job (size " + std::to_string(size()) +
                                    ")");
  return Status::OK();
}

// Waits for every handle, so no buffer is left in use, and returns the first error.
Status wait_all(std::vector<Handle>& handles) {
  Status first_error;
  for (Handle& h : handles) {
    Status s = h.wait();
    if (!s.ok() && first_error.ok()) first_error = s;
  }
  return first_error;
}

}  // namespace

Status broadcast_state_tensors(const std::vector<StateTensor>& tensors, const std::string& prefix,
                               int root, int process_set) {
  HORA_RETURN_IF_ERROR(check_root(root, "broadcast", process_set));
  std::vector<Handle> handles;
  Status first_error;
  for (const StateTensor& t : tensors) {
    auto view = TensorView::flat(t.data, DataType::kFloat32, t.count);
    if (!view.ok()) {
      first_error = view.status();
      break;
    }
    handles.push_back(broadcast_async(prefix + t.name, view.value(), root, process_set));
  }
  Status waited = wait_all(handles);
  return first_error.ok() ? waited : first_error;
}

Status broadcast_parameters(const std::vector<Parameter>& params, int root, int process_set) {
  std::vector<StateTensor> values;
  values.reserve(params.size());
  for (const Parameter& p : params) values.push_back({p.name, p.value, p.count});
  return broadcast_state_tensors(values, "broadcast/param/", root, process_set);
}

Status broadcast_optimizer_state(Optimizer& optimizer, int root, int process_set) {
  return broadcast_state_tensors(optimizer.state(), "broadcast/state/", root, process_set);
}

StatusOr<std::vector<double>> allreduce_metrics(const std::string& name, std::vector<double> values,
                                                ReduceOp op, int process_set) {
  if (!is_initialized())
    return Status::failed_precondition("allreduce_metrics('" + name +
                                       "'): hora is not initialised (call hora::init first)");
  HORA_ASSIGN_OR_RETURN(TensorView view, TensorView::flat(values.data(), DataType::kFloat64,
                                                          static_cast<int64_t>(values.size())));
  AllreduceOptions options;
  options.op = op;
  options.process_set = process_set;
  HORA_RETURN_IF_ERROR(allreduce("metric/" + name, view, view, options));
  return values;
}

StatusOr<double> average_metric(const std::string& name, double value, int process_set) {
  HORA_ASSIGN_OR_RETURN(std::vector<double> out,
                        allreduce_metrics(name, {value}, ReduceOp::kAverage, process_set));
  return out[0];
}

}  // namespace hora
