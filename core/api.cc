// The collective calls of core/hora.h: validate on the calling thread, build the requests,
// enqueue them to the engine, return the handle. No communication happens here.
#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include "core/engine/engine.h"
#include "core/engine/engine_access.h"
#include "core/engine/handle_state.h"
#include "core/hora.h"

namespace hora {
namespace {

using engine::CollectiveType;
using engine::Entry;
using engine::Request;

// Unnamed calls are named from one per-process counter, so every rank must make them in the
// same order. A name is drawn only once the call passed its checks: a call that fails on one
// rank alone (bad input) must not shift the numbering of the ones after it.
std::string resolve_name(const std::string& name, CollectiveType type) {
  if (!name.empty()) return name;
  static std::atomic<int64_t> counter{0};
  return std::string(engine::collective_name(type)) + ".noname." + std::to_string(counter++);
}

// What errors call a tensor before its name is drawn.
std::string label_of(const std::string& name, CollectiveType type) {
  return name.empty() ? std::string("<unnamed ") + engine::collective_name(type) + ">" : name;
}

Handle fail(const std::string& name, Status status) {
  return Handle(detail::HandleState::failed(name, std::move(status)));
}

Status check_tensor(const std::string& name, const char* what, const TensorView& t,
                    CollectiveType type, bool needs_rows) {
  if (!t.device().is_cpu())
    return Status::invalid_argument("tensor '" + name + "': " + what + " is on " +
                                    t.device().to_string() +
                                    " but this hora build has no GPU backend (CPU tensors only)");
  if (needs_rows && t.shape().empty())
    return Status::invalid_argument("tensor '" + name + "': " +
                                    engine::collective_name(type) +
                                    " needs at least one dimension (it splits or joins along the "
                                    "first), got a scalar");
  return Status::ok();
}

Entry make_entry(const std::string& name, CollectiveType type, const TensorView& in,
                 const TensorView& out, std::shared_ptr<detail::HandleState> handle) {
  Entry e;
  e.request.name = name;
  e.request.type = type;
  e.request.dtype = in.dtype();
  e.request.shape = in.shape();
  e.request.device = in.device();
  e.in = in;
  e.out = out;
  e.handle = std::move(handle);
  e.enqueued = engine::Clock::now();
  return e;
}

// Enqueues entries sharing `handle`; returns the handle or a failed one.
Handle submit(engine::Engine& eng, std::vector<Entry> entries,
              std::shared_ptr<detail::HandleState> handle) {
  Status s = eng.enqueue(std::move(entries));
  if (!s.is_ok()) return fail(handle->name, s);
  return Handle(std::move(handle));
}

Handle submit_one(engine::Engine& eng, Entry e) {
  std::shared_ptr<detail::HandleState> handle = e.handle;
  std::vector<Entry> entries;
  entries.push_back(std::move(e));
  return submit(eng, std::move(entries), std::move(handle));
}

Status check_scales(const std::string& name, double prescale, double postscale) {
  if (!std::isfinite(prescale) || !std::isfinite(postscale))
    return Status::invalid_argument("tensor '" + name + "': prescale " + std::to_string(prescale) +
                                    " and postscale " + std::to_string(postscale) +
                                    " must be finite");
  return Status::ok();
}

Status check_allreduce(const std::string& name, const TensorView& in, const TensorView& out) {
  HORA_RETURN_IF_ERROR(check_tensor(name, "input", in, CollectiveType::kAllreduce, false));
  HORA_RETURN_IF_ERROR(check_tensor(name, "output", out, CollectiveType::kAllreduce, false));
  if (in.dtype() != out.dtype() || in.element_count() != out.element_count())
    return Status::invalid_argument(
        "tensor '" + name + "': allreduce output must match the input, got input " +
        data_type_name(in.dtype()) + in.shape_string() + " and output " +
        data_type_name(out.dtype()) + out.shape_string());
  return Status::ok();
}

const char* kNotInit = " called before hora::init() or after hora::shutdown()";

}  // namespace

Handle allreduce_async(const std::string& given, const TensorView& in, const TensorView& out,
                       ReduceOp op, double prescale, double postscale) {
  std::string name = label_of(given, CollectiveType::kAllreduce);
  auto eng = detail::engine();
  if (!eng) return fail(name, Status::failed_precondition("allreduce of '" + name + "'" + kNotInit));
  Status s = check_allreduce(name, in, out);
  if (s.is_ok()) s = check_scales(name, prescale, postscale);
  if (!s.is_ok()) return fail(name, s);
  name = resolve_name(given, CollectiveType::kAllreduce);
  auto handle = std::make_shared<detail::HandleState>(name, 1, eng->timeout_s());
  Entry e = make_entry(name, CollectiveType::kAllreduce, in, out, handle);
  e.request.op = op;
  e.request.prescale = prescale;
  e.request.postscale = postscale;
  return submit_one(*eng, std::move(e));
}

Handle grouped_allreduce_async(const std::vector<std::string>& names,
                               const std::vector<TensorView>& ins,
                               const std::vector<TensorView>& outs, ReduceOp op,
                               double prescale, double postscale) {
  const std::string label = names.empty() ? "<empty group>" : names[0];
  auto eng = detail::engine();
  if (!eng) return fail(label, Status::failed_precondition("grouped allreduce" + std::string(kNotInit)));
  if (names.empty() || names.size() != ins.size() || names.size() != outs.size())
    return fail(label, Status::invalid_argument(
                           "grouped allreduce needs as many names as inputs and outputs, at "
                           "least one; got " + std::to_string(names.size()) + " names, " +
                           std::to_string(ins.size()) + " inputs, " +
                           std::to_string(outs.size()) + " outputs"));
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string label = label_of(names[i], CollectiveType::kAllreduce);
    Status s = check_allreduce(label, ins[i], outs[i]);
    if (s.is_ok()) s = check_scales(label, prescale, postscale);
    if (!s.is_ok()) return fail(label_of(names[0], CollectiveType::kAllreduce) + "#group", s);
  }
  std::vector<std::string> resolved;
  for (const std::string& n : names) resolved.push_back(resolve_name(n, CollectiveType::kAllreduce));
  const std::string key = resolved[0] + "#group";
  auto handle = std::make_shared<detail::HandleState>(key, static_cast<int>(names.size()),
                                                      eng->timeout_s());
  std::vector<Entry> entries;
  for (size_t i = 0; i < resolved.size(); ++i) {
    Entry e = make_entry(resolved[i], CollectiveType::kAllreduce, ins[i], outs[i], handle);
    e.request.op = op;
    e.request.prescale = prescale;
    e.request.postscale = postscale;
    e.request.group_key = key;
    e.request.group_size = static_cast<int32_t>(resolved.size());
    entries.push_back(std::move(e));
  }
  return submit(*eng, std::move(entries), std::move(handle));
}

Handle allgather_async(const std::string& given, const TensorView& in) {
  std::string name = label_of(given, CollectiveType::kAllgather);
  auto eng = detail::engine();
  if (!eng) return fail(name, Status::failed_precondition("allgather of '" + name + "'" + kNotInit));
  Status s = check_tensor(name, "input", in, CollectiveType::kAllgather, true);
  if (!s.is_ok()) return fail(name, s);
  name = resolve_name(given, CollectiveType::kAllgather);
  auto handle = std::make_shared<detail::HandleState>(name, 1, eng->timeout_s());
  return submit_one(*eng, make_entry(name, CollectiveType::kAllgather, in, in, handle));
}

Handle broadcast_async(const std::string& given, const TensorView& tensor, int root) {
  std::string name = label_of(given, CollectiveType::kBroadcast);
  auto eng = detail::engine();
  if (!eng) return fail(name, Status::failed_precondition("broadcast of '" + name + "'" + kNotInit));
  Status s = check_tensor(name, "tensor", tensor, CollectiveType::kBroadcast, false);
  if (s.is_ok() && (root < 0 || root >= eng->size()))
    s = Status::invalid_argument("tensor '" + name + "': broadcast root " + std::to_string(root) +
                                 " is not a rank of this job (0.." +
                                 std::to_string(eng->size() - 1) + ")");
  if (!s.is_ok()) return fail(name, s);
  name = resolve_name(given, CollectiveType::kBroadcast);
  auto handle = std::make_shared<detail::HandleState>(name, 1, eng->timeout_s());
  Entry e = make_entry(name, CollectiveType::kBroadcast, tensor, tensor, handle);
  e.request.root = root;
  return submit_one(*eng, std::move(e));
}

Handle alltoall_async(const std::string& given, const TensorView& in,
                      const std::vector<int64_t>& splits) {
  std::string name = label_of(given, CollectiveType::kAlltoall);
  auto eng = detail::engine();
  if (!eng) return fail(name, Status::failed_precondition("alltoall of '" + name + "'" + kNotInit));
  Status s = check_tensor(name, "input", in, CollectiveType::kAlltoall, true);
  if (!s.is_ok()) return fail(name, s);
  const int size = eng->size();
  const int64_t rows = in.shape()[0];
  std::vector<int64_t> resolved = splits;
  if (resolved.empty()) {
    if (rows % size != 0)
      return fail(name, Status::invalid_argument(
                            "tensor '" + name + "': alltoall without splits needs the first "
                            "dimension " + std::to_string(rows) + " to divide evenly by the " +
                            std::to_string(size) + " ranks; pass splits"));
    resolved.assign(size, rows / size);
  }
  int64_t sum = 0;
  for (int64_t v : resolved) {
    if (v < 0)
      return fail(name, Status::invalid_argument("tensor '" + name + "': alltoall split " +
                                                 std::to_string(v) + " is negative"));
    sum += v;
  }
  if (static_cast<int>(resolved.size()) != size || sum != rows)
    return fail(name, Status::invalid_argument(
                          "tensor '" + name + "': alltoall needs one split per rank (" +
                          std::to_string(size) + ") summing to the first dimension " +
                          std::to_string(rows) + ", got " + std::to_string(resolved.size()) +
                          " splits summing to " + std::to_string(sum)));
  name = resolve_name(given, CollectiveType::kAlltoall);
  auto handle = std::make_shared<detail::HandleState>(name, 1, eng->timeout_s());
  Entry e = make_entry(name, CollectiveType::kAlltoall, in, in, handle);
  e.request.splits = resolved;
  return submit_one(*eng, std::move(e));
}

Handle reducescatter_async(const std::string& given, const TensorView& in, ReduceOp op) {
  std::string name = label_of(given, CollectiveType::kReducescatter);
  auto eng = detail::engine();
  if (!eng)
    return fail(name, Status::failed_precondition("reducescatter of '" + name + "'" + kNotInit));
  Status s = check_tensor(name, "input", in, CollectiveType::kReducescatter, true);
  if (!s.is_ok()) return fail(name, s);
  name = resolve_name(given, CollectiveType::kReducescatter);
  auto handle = std::make_shared<detail::HandleState>(name, 1, eng->timeout_s());
  Entry e = make_entry(name, CollectiveType::kReducescatter, in, in, handle);
  e.request.op = op;
  return submit_one(*eng, std::move(e));
}

Status allreduce(const std::string& name, const TensorView& in, const TensorView& out,
                 ReduceOp op, double prescale, double postscale) {
  return allreduce_async(name, in, out, op, prescale, postscale).wait();
}

Status grouped_allreduce(const std::vector<std::string>& names, const std::vector<TensorView>& ins,
                         const std::vector<TensorView>& outs, ReduceOp op, double prescale,
                         double postscale) {
  return grouped_allreduce_async(names, ins, outs, op, prescale, postscale).wait();
}

Status broadcast(const std::string& name, const TensorView& tensor, int root) {
  return broadcast_async(name, tensor, root).wait();
}

namespace {

StatusOr<CollectiveResult> result_of(Handle h) {
  HORA_RETURN_IF_ERROR(h.wait());
  CollectiveResult r;
  r.data = h.output();
  r.shape = h.output_shape();
  r.received_splits = h.received_splits();
  return r;
}

}  // namespace

StatusOr<CollectiveResult> allgather(const std::string& name, const TensorView& in) {
  return result_of(allgather_async(name, in));
}

StatusOr<CollectiveResult> alltoall(const std::string& name, const TensorView& in,
                                    const std::vector<int64_t>& splits) {
  return result_of(alltoall_async(name, in, splits));
}

StatusOr<CollectiveResult> reducescatter(const std::string& name, const TensorView& in,
                                         ReduceOp op) {
  return result_of(reducescatter_async(name, in, op));
}

namespace {

// Waits for a handle whose completion depends on other ranks' progress, not on a size of
// work (barrier, join): as long as the engine runs (its rounds notice a dead peer and then
// complete the handle with that error), keep waiting.
Status wait_while_alive(Handle& h, double timeout_s) {
  const auto slice = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000.0));
  while (true) {
    Status s = h.wait(slice);
    if (h.poll()) return s;
  }
}

Handle control_request(CollectiveType type, const std::string& name) {
  auto eng = detail::engine();
  if (!eng) return fail(name, Status::failed_precondition(std::string(engine::collective_name(type)) + kNotInit));
  auto handle = std::make_shared<detail::HandleState>(name, 1, eng->timeout_s());
  Entry e;
  e.request.name = name;
  e.request.type = type;
  e.request.dtype = DataType::kUint8;
  e.handle = handle;
  e.enqueued = engine::Clock::now();
  return submit_one(*eng, std::move(e));
}

}  // namespace

Status barrier() {
  Handle h = control_request(CollectiveType::kBarrier, resolve_name("", CollectiveType::kBarrier));
  auto eng = detail::engine();
  return wait_while_alive(h, eng ? eng->timeout_s() : 1.0);
}

StatusOr<int> join() {
  Handle h = control_request(CollectiveType::kJoin, "hora.join");
  auto eng = detail::engine();
  HORA_RETURN_IF_ERROR(wait_while_alive(h, eng ? eng->timeout_s() : 1.0));
  return h.state()->join_result;
}

EngineStats engine_stats() {
  auto eng = detail::engine();
  return eng ? eng->stats() : EngineStats{};
}

}  // namespace hora
