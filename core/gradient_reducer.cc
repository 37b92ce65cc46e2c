// GradientReducer: pass counting, group readiness, the step's handles and its first error.
#include "hora/gradient_reducer.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

namespace hora {
namespace {

const char* const kWho = "GradientReducer: ";

std::string quoted(const std::string& name) { return "'" + name + "'"; }

Status check_options(const std::vector<std::string>& names, const GradientReducerOptions& o) {
  if (o.op != ReduceOp::kAverage && o.op != ReduceOp::kSum && o.op != ReduceOp::kAdasum)
    return Status::invalid_argument(std::string(kWho) + "op " + reduce_op_name(o.op) +
                                    ", expected average, sum or adasum");
  HORA_RETURN_IF_ERROR(compression_from_int(static_cast<int>(o.compression)).status());
  if (o.backward_passes_per_step < 1)
    return Status::invalid_argument(std::string(kWho) + "backward_passes_per_step is " +
                                    std::to_string(o.backward_passes_per_step) + ", expected >= 1");
  if (!(o.gradient_predivide_factor > 0.0) || !std::isfinite(o.gradient_predivide_factor))
    return Status::invalid_argument(std::string(kWho) + "gradient_predivide_factor is " +
                                    std::to_string(o.gradient_predivide_factor) +
                                    ", expected a finite value > 0");
  if (o.gradient_predivide_factor != 1.0 && o.op != ReduceOp::kAverage)
    return Status::invalid_argument(std::string(kWho) + "gradient_predivide_factor " +
                                    std::to_string(o.gradient_predivide_factor) +
                                    " needs op average (it splits the average), not " +
                                    reduce_op_name(o.op));
  std::set<std::string> seen;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty())
      return Status::invalid_argument(std::string(kWho) + "parameter " + std::to_string(i) +
                                      " of " + std::to_string(names.size()) +
                                      " has no name; every parameter needs a unique name, the "
                                      "same on every rank");
    if (!seen.insert(names[i]).second)
      return Status::invalid_argument(std::string(kWho) + "parameter name " + quoted(names[i]) +
                                      " appears twice; names must be unique");
  }
  std::vector<int> group_of(names.size(), -1);
  for (size_t g = 0; g < o.groups.size(); ++g) {
    if (o.groups[g].empty())
      return Status::invalid_argument(std::string(kWho) + "group " + std::to_string(g) +
                                      " is empty");
    for (size_t index : o.groups[g]) {
      if (index >= names.size())
        return Status::invalid_argument(std::string(kWho) + "group " + std::to_string(g) +
                                        " lists parameter " + std::to_string(index) +
                                        " but there are " + std::to_string(names.size()) +
                                        " parameters");
      if (group_of[index] >= 0)
        return Status::invalid_argument(
            std::string(kWho) + "parameter " + quoted(names[index]) + " (index " +
            std::to_string(index) + ") is listed in group " + std::to_string(group_of[index]) +
            " and again in group " + std::to_string(g) + "; each parameter may be in one group");
      group_of[index] = static_cast<int>(g);
    }
  }
  return Status::OK();
}

}  // namespace

struct GradientReducer::Slot {
  int passes = 0;         // backward passes counted this step
  bool ready = false;     // final for this step (k-th pass or flushed); may wait for its group
  bool enqueued = false;  // its allreduce (alone or in its group) is in flight
  TensorView grad;        // where the gradient lies (the last view reported)
};

struct GradientReducer::InFlight {
  Handle handle;
  size_t index = 0;             // the parameter, when `members` is empty
  std::vector<size_t> members;  // a group's members
  // Iterates over its parameters: `index` alone, or `members`.
  const size_t* begin() const { return members.empty() ? &index : members.data(); }
  const size_t* end() const { return begin() + (members.empty() ? 1 : members.size()); }
};

StatusOr<std::unique_ptr<GradientReducer>> GradientReducer::create(std::vector<std::string> names,
                                                                   GradientReducerOptions options) {
  HORA_RETURN_IF_ERROR(check_options(names, options));
  return std::unique_ptr<GradientReducer>(
      new GradientReducer(std::move(names), std::move(options)));
}

GradientReducer::GradientReducer(std::vector<std::string> names, GradientReducerOptions options)
    : names_(std::move(names)), options_(std::move(options)), slots_(names_.size()) {
  for (size_t i = 0; i < names_.size(); ++i) index_.emplace_back(names_[i], i);
  wire_names_.reserve(names_.size());
  for (const std::string& name : names_) wire_names_.push_back(options_.name_prefix + name);
  std::sort(index_.begin(), index_.end());
  group_of_.assign(names_.size(), -1);
  for (size_t g = 0; g < options_.groups.size(); ++g)
    for (size_t index : options_.groups[g]) group_of_[index] = static_cast<int>(g);
  if (options_.op == ReduceOp::kAverage) {
    // The engine's average multiplies the postscale by 1/size.
    prescale_ = 1.0 / options_.gradient_predivide_factor;
    postscale_ = options_.gradient_predivide_factor;
  }
  if (options_.average_aggregated_gradients)
    prescale_ /= static_cast<double>(options_.backward_passes_per_step);
}

GradientReducer::~GradientReducer() {
  // Buffers must not disappear under the engine: wait for whatever is still in flight.
  std::vector<InFlight> left;
  {
    MutexLock lock(&mu_);
    left.swap(in_flight_);
  }
  for (InFlight& f : left) (void)f.handle.wait();
}

StatusOr<size_t> GradientReducer::index_of(const std::string& name) const {
  auto it = std::lower_bound(index_.begin(), index_.end(), std::make_pair(name, size_t{0}));
  if (it == index_.end() || it->first != name)
    return Status::invalid_argument(
        std::string(kWho) + "gradient of " + quoted(name) + " reported, but it is not one of the " +
        std::to_string(names_.size()) + " parameters this reducer was created with");
  return it->second;
}

Status GradientReducer::check_gradient(size_t index, const TensorView& grad) const {
  if (index >= names_.size())
    return Status::invalid_argument(std::string(kWho) + "parameter index " + std::to_string(index) +
                                    " is out of range: there are " + std::to_string(names_.size()) +
                                    " parameters");
  if (options_.compression != Compression::kNone && grad.dtype() != DataType::kFloat32)
    return Status::invalid_argument(std::string(kWho) + "the gradient of " + quoted(names_[index]) +
                                    " is " + data_type_name(grad.dtype()) + " but compression " +
                                    compression_name(options_.compression) +
                                    " applies to float32 gradients only");
  return Status::OK();
}

Status GradientReducer::gradient_ready(const std::string& name, const TensorView& grad) {
  HORA_ASSIGN_OR_RETURN(size_t index, index_of(name));
  return gradient_ready(index, grad);
}

Status GradientReducer::gradient_ready(size_t index, const TensorView& grad) {
  HORA_RETURN_IF_ERROR(check_gradient(index, grad));
  MutexLock lock(&mu_);
  Slot& slot = slots_[index];
  const int k = options_.backward_passes_per_step;
  if (slot.passes >= k)
    return Status::failed_precondition(
        std::string(kWho) + "the gradient of " + quoted(names_[index]) +
        " was computed more than backward_passes_per_step (" + std::to_string(k) +
        ") times before synchronize(); raise backward_passes_per_step to accumulate gradients "
        "locally");
  if (slot.ready || slot.enqueued)
    return Status::failed_precondition(std::string(kWho) + "the gradient of " +
                                       quoted(names_[index]) +
                                       " was reported after flush() in the same step");
  ++slot.passes;
  slot.grad = grad;
  if (options_.overlap_backward && slot.passes == k) return ready_locked(index);
  return Status::OK();
}

std::vector<size_t> GradientReducer::unreported() const {
  MutexLock lock(&mu_);
  std::vector<size_t> out;
  for (size_t i = 0; i < slots_.size(); ++i)
    if (!slots_[i].enqueued) out.push_back(i);
  return out;
}

Status GradientReducer::flush(size_t index, const TensorView& grad) {
  HORA_RETURN_IF_ERROR(check_gradient(index, grad));
  MutexLock lock(&mu_);
  Slot& slot = slots_[index];
  if (slot.enqueued) return Status::OK();
  slot.grad = grad;
  if (slot.ready) return Status::OK();  // waiting for the rest of its group
  return ready_locked(index);
}

Status GradientReducer::ready_locked(size_t index) {
  slots_[index].ready = true;
  const int g = group_of_[index];
  if (g < 0) return enqueue_one_locked(index);
  const std::vector<size_t>& members = options_.groups[g];
  for (size_t m : members)
    if (!slots_[m].ready) return Status::OK();
  return enqueue_group_locked(members);
}

Status GradientReducer::enqueue_one_locked(size_t index) {
  const AllreduceOptions ao{options_.op, prescale_, postscale_, options_.compression,
                            options_.process_set};
  const Slot& slot = slots_[index];
  return track_locked(allreduce_async(wire_names_[index], slot.grad, slot.grad, ao), index, {});
}

Status GradientReducer::enqueue_group_locked(const std::vector<size_t>& members) {
  const AllreduceOptions ao{options_.op, prescale_, postscale_, options_.compression,
                            options_.process_set};
  std::vector<std::string> names;
  std::vector<TensorView> views;
  names.reserve(members.size());
  views.reserve(members.size());
  for (size_t m : members) {
    names.push_back(wire_names_[m]);
    views.push_back(slots_[m].grad);
  }
  return track_locked(grouped_allreduce_async(names, views, views, ao), 0, members);
}

Status GradientReducer::track_locked(Handle h, size_t index, std::vector<size_t> members) {
  InFlight& f = in_flight_.emplace_back();
  f.handle = std::move(h);
  f.index = index;
  f.members = std::move(members);
  for (size_t m : f) {
    slots_[m].ready = true;
    slots_[m].enqueued = true;
  }
  Handle& handle = f.handle;
  // An enqueue the engine refused (not initialised, a bad tensor) has failed already: say so
  // now too. synchronize() reports it as well, like any failed allreduce of the step.
  if (handle.poll()) {
    Status s = handle.wait(std::chrono::milliseconds(0));
    if (!s.ok()) return s.with_context(std::string(kWho) + "allreduce of " + quoted(handle.name()));
  }
  return Status::OK();
}

void GradientReducer::enqueue_leftovers_locked() {
  std::vector<bool> done_group(options_.groups.size(), false);
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& slot = slots_[i];
    if (slot.enqueued || (slot.passes == 0 && !slot.ready)) continue;
    const int g = group_of_[i];
    if (g < 0) {
      (void)enqueue_one_locked(i);
      continue;
    }
    if (done_group[g]) continue;
    done_group[g] = true;
    // The members this step saw: every member when the adapter flushed the unused ones, as
    // it must for every rank to run the same collectives.
    std::vector<size_t> members;
    for (size_t m : options_.groups[g]) {
      const Slot& s = slots_[m];
      if (!s.enqueued && (s.passes > 0 || s.ready)) members.push_back(m);
    }
    if (!members.empty()) (void)enqueue_group_locked(members);
  }
}

void GradientReducer::retire_completed_locked() {
  auto keep = in_flight_.begin();
  for (auto it = in_flight_.begin(); it != in_flight_.end(); ++it) {
    if (!it->handle.poll()) {
      if (keep != it) *keep = std::move(*it);
      ++keep;
      continue;
    }
    Status s = it->handle.wait(std::chrono::milliseconds(0));
    if (!s.ok() && first_error_.ok())
      first_error_ =
          s.with_context(std::string(kWho) + "allreduce of " + quoted(it->handle.name()));
    for (size_t m : *it) slots_[m] = Slot();
  }
  in_flight_.erase(keep, in_flight_.end());
}

Status GradientReducer::synchronize() { return wait_step(nullptr); }

Status GradientReducer::synchronize(std::chrono::milliseconds timeout) {
  return wait_step(&timeout);
}

Status GradientReducer::wait_step(const std::chrono::milliseconds* timeout) {
  std::vector<Handle> handles;
  {
    MutexLock lock(&mu_);
    enqueue_leftovers_locked();
    for (const InFlight& f : in_flight_) handles.push_back(f.handle);
  }
  // Every handle is waited for, also after one failed: the buffers stay the engine's until
  // their own handle completed.
  Status timed_out;
  const auto deadline =
      std::chrono::steady_clock::now() + (timeout ? *timeout : std::chrono::milliseconds(0));
  for (Handle& h : handles) {
    Status s;
    if (timeout == nullptr) {
      s = h.wait();
    } else {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      s = h.wait(std::max(left, std::chrono::milliseconds(0)));
    }
    if (!h.poll() && timed_out.ok()) timed_out = s;
  }
  MutexLock lock(&mu_);
  retire_completed_locked();
  if (in_flight_.empty()) {
    // The step is over: every gradient buffer holds its reduced value (or the error says why
    // not), and the next step starts from zero passes.
    for (Slot& slot : slots_) slot = Slot();
    Status first = std::move(first_error_);
    first_error_ = Status();
    return first;
  }
  if (timeout != nullptr)
    return Status::timeout(std::string(kWho) + std::to_string(in_flight_.size()) +
                           " allreduce(s) of this step not complete after " +
                           std::to_string(timeout->count()) +
                           " ms (the first: " + quoted(in_flight_.front().handle.name()) +
                           "); they stay pending: call synchronize() again");
  // Waited HORA_TIMEOUT_S for each: report the step's first error now, else the timeout. The
  // pending handles stay; a later synchronize (or the destructor) waits for them again.
  if (!first_error_.ok()) {
    Status first = std::move(first_error_);
    first_error_ = Status();
    return first;
  }
  return timed_out.ok()
             ? Status::timeout(std::string(kWho) + "allreduce of " +
                               quoted(in_flight_.front().handle.name()) + " is still pending")
             : timed_out.with_context(std::string(kWho) + "synchronize");
}

bool GradientReducer::has_pending() const {
  MutexLock lock(&mu_);
  if (!in_flight_.empty()) return true;
  for (const Slot& slot : slots_)
    if (slot.passes > 0 || slot.ready || slot.enqueued) return true;
  return false;
}

}  // namespace hora
