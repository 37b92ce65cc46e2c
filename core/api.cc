// The collective calls of hora/hora.h: validate on the calling thread, build the requests,
// enqueue them to the engine, return the handle. No communication happens here.
#include <atomic>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/engine/engine.h"
#include "core/engine/handle_pool.h"
#include "core/engine/handle_state.h"
#include "core/engine_access.h"
#include "core/process_set_table.h"
#include "hora/hora.h"
#include "hora/mutex.h"
#include "hora/thread_annotations.h"

namespace hora {
namespace {

using engine::CollectiveType;
using engine::Entry;
using engine::Request;

// Unnamed calls are named from one per-process counter, so every rank must make them in the
// same order. A name is drawn only once the call passed its checks: a call that fails on one
// rank alone (bad input) must not shift the numbering of the ones after it.
// Returns `given`, or for an unnamed call a name drawn into *drawn (no copy of a given name:
// the enqueue path runs per tensor).
// A process set's unnamed calls are numbered by the set's own counter (`set`, null for the
// global set): only its members make them.
const std::string& resolve_name(const std::string& given, CollectiveType type, std::string* drawn,
                                const ProcessSetInfo* set = nullptr) {
  if (!given.empty()) return given;
  static std::atomic<int64_t> counter{0};
  std::atomic<int64_t>& count = set != nullptr ? set->unnamed_calls : counter;
  *drawn = std::string(engine::collective_name(type)) + ".noname." + std::to_string(count++);
  if (set != nullptr) *drawn += ".set" + std::to_string(set->id);
  return *drawn;
}

// What errors call a tensor before its name is drawn: `given`, or for an unnamed call a label
// made in *unnamed.
const std::string& label_of(const std::string& given, CollectiveType type, std::string* unnamed) {
  if (!given.empty()) return given;
  *unnamed = std::string("<unnamed ") + engine::collective_name(type) + ">";
  return *unnamed;
}

Handle fail(const std::string& name, Status status) {
  return detail::HandleAccess::make(detail::HandleState::failed(name, std::move(status)));
}

Status check_tensor(const std::string& name, const char* what, const TensorView& t,
                    CollectiveType type, bool needs_rows) {
  // A tensor on a GPU is routed (or refused, naming it and its device) by the engine's
  // DeviceExecutor::admit, which knows what this job has for GPU tensors.
  (void)what;
  if (needs_rows && t.shape().empty())
    return Status::invalid_argument("tensor '" + name + "': " + engine::collective_name(type) +
                                    " needs at least one dimension (it splits or joins along the "
                                    "first), got a scalar");
  return Status::OK();
}

// Appends the entry of `name` to `entries` (built in place: no Entry is moved or copied on its
// way into the batch) and returns it for the caller's collective-specific fields.
Entry& add_entry(std::vector<Entry>& entries, const std::string& name, CollectiveType type,
                 const TensorView& in, const TensorView& out,
                 const std::shared_ptr<detail::HandleState>& handle) {
  Entry& e = entries.emplace_back();
  e.request.name = name;
  e.request.type = type;
  e.request.dtype = in.dtype();
  e.request.shape = in.shape();
  e.request.device = in.device();
  e.in = in;
  e.out = out;
  e.handle = handle;
  e.enqueued = engine::Clock::now();
  return e;
}

// An empty batch for one entry: the calling thread's own, reused from call to call (its
// capacity kept, so a call allocates no vector; submit() empties it again). Nothing between
// add_entry and submit calls back into the API, so one per thread suffices.
std::vector<Entry>& one_entry() {
  thread_local std::vector<Entry> entries;
  entries.clear();
  return entries;
}

// Enqueues entries sharing `handle`, then empties `entries` (the enqueued ones are moved
// from; a failed batch's handle references go now); returns the handle or a failed one.
Handle submit(engine::Engine& eng, std::vector<Entry>& entries,
              std::shared_ptr<detail::HandleState> handle) {
  Status s = eng.enqueue(std::move(entries));
  entries.clear();
  if (!s.ok()) return fail(handle->name(), s);
  return detail::HandleAccess::make(std::move(handle));
}

// Enqueues a batch of entries with a handle each; when the queue refuses it, every handle
// fails with that error.
std::vector<Handle> submit_batch(engine::Engine& eng, std::vector<Entry>& entries,
                                 std::vector<Handle> handles) {
  if (entries.empty()) return handles;
  Status s = eng.enqueue(std::move(entries));
  if (!s.ok()) {
    for (Handle& h : handles) h = fail(h.name(), s);
  }
  return handles;
}

Status check_scales(const std::string& name, double prescale, double postscale) {
  if (!std::isfinite(prescale) || !std::isfinite(postscale))
    return Status::invalid_argument("tensor '" + name + "': prescale " + std::to_string(prescale) +
                                    " and postscale " + std::to_string(postscale) +
                                    " must be finite");
  return Status::OK();
}

Status check_allreduce(const std::string& name, const TensorView& in, const TensorView& out) {
  // check_tensor has nothing to refuse for an allreduce (no rows needed; devices are the
  // engine's to route), so it is not called per tensor.
  if (in.dtype() != out.dtype() || in.element_count() != out.element_count())
    return Status::invalid_argument(
        "tensor '" + name + "': allreduce output must match the input, got input " +
        data_type_name(in.dtype()) + in.shape_string() + " and output " +
        data_type_name(out.dtype()) + out.shape_string());
  return Status::OK();
}

// What reduce_op.h leaves undefined: sum and average on bool, and scaling bool by anything
// but 1. Refused here, on the calling thread, so the engine never sees them.
Status check_reduction(const std::string& name, CollectiveType type, DataType dtype, ReduceOp op,
                       double prescale, double postscale) {
  // The message (and its context) is built only on failure: this runs on every call.
  if (op == ReduceOp::kAdasum && type != CollectiveType::kAllreduce)
    return Status::invalid_argument("tensor '" + name + "': " + engine::collective_name(type) +
                                    " does not take op adasum: Adasum combines whole tensors "
                                    "and is defined for allreduce and grouped allreduce only");
  if (!is_reduce_op_defined(op, dtype))
    return check_reduce_op(op, dtype, "tensor '" + name + "': " + engine::collective_name(type));
  if (!is_scale_defined(dtype, prescale) || !is_scale_defined(dtype, postscale))
    return Status::invalid_argument("tensor '" + name + "': prescale " + std::to_string(prescale) +
                                    " and postscale " + std::to_string(postscale) +
                                    " are not defined for " + data_type_name(dtype) +
                                    " (only 1.0)");
  return Status::OK();
}

// The enum fields of AllreduceOptions (a binding may hand over any integer), and compression
// on float32 only.
// The parsers' errors (a StatusOr each) are made only for a code out of range: this runs on
// every call.
Status check_options(const std::string& name, DataType dtype, const AllreduceOptions& options) {
  const int op = static_cast<int>(options.op);
  if (op < 0 || op >= kNumReduceOps)
    return reduce_op_from_int(op).status().with_context("tensor '" + name + "'");
  const int compression = static_cast<int>(options.compression);
  if (compression < 0 || compression >= kNumCompressions)
    return compression_from_int(compression).status().with_context("tensor '" + name + "'");
  if (options.compression != Compression::kNone && dtype != DataType::kFloat32)
    return Status::invalid_argument(
        "tensor '" + name + "': compression " + compression_name(options.compression) +
        " applies to float32 tensors only, got " + data_type_name(dtype));
  return Status::OK();
}

// Every check of one allreduce's input, output and options, in the order above. Most calls
// pass them all, so one test of the conditions they check comes first, and the checks (each
// a Status) run only when it fails, to say which and build the message.
Status check_allreduce_call(const std::string& name, const TensorView& in, const TensorView& out,
                            const AllreduceOptions& options) {
  const int op = static_cast<int>(options.op);
  const int compression = static_cast<int>(options.compression);
  const DataType dtype = in.dtype();
  if (dtype == out.dtype() && in.element_count() == out.element_count() && op >= 0 &&
      op < kNumReduceOps && compression >= 0 && compression < kNumCompressions &&
      (options.compression == Compression::kNone || dtype == DataType::kFloat32) &&
      std::isfinite(options.prescale) && std::isfinite(options.postscale) &&
      is_reduce_op_defined(options.op, dtype) && is_scale_defined(dtype, options.prescale) &&
      is_scale_defined(dtype, options.postscale))
    return Status::OK();
  Status s = check_allreduce(name, in, out);
  if (s.ok()) s = check_options(name, dtype, options);
  if (s.ok()) s = check_scales(name, options.prescale, options.postscale);
  if (s.ok())
    s = check_reduction(name, CollectiveType::kAllreduce, dtype, options.op, options.prescale,
                        options.postscale);
  return s;
}

// An allreduce's entry, with the options' reduction (add_entry).
Entry& add_allreduce_entry(std::vector<Entry>& entries, const std::string& name,
                           const TensorView& in, const TensorView& out,
                           const std::shared_ptr<detail::HandleState>& handle,
                           const AllreduceOptions& options) {
  Entry& e = add_entry(entries, name, CollectiveType::kAllreduce, in, out, handle);
  e.request.op = options.op;
  e.request.prescale = options.prescale;
  e.request.postscale = options.postscale;
  e.request.compression = options.compression;
  return e;
}

// Every check of one reducescatter's input, op and scale factors.
Status check_reducescatter(const std::string& label, const TensorView& in, ReduceOp op,
                           double prescale, double postscale) {
  Status s = check_tensor(label, "input", in, CollectiveType::kReducescatter, true);
  if (s.ok()) s = check_scales(label, prescale, postscale);
  if (s.ok())
    s = check_reduction(label, CollectiveType::kReducescatter, in.dtype(), op, prescale, postscale);
  if (s.ok() && !in.device().is_cpu() && (prescale != 1.0 || postscale != 1.0))
    s = Status::unimplemented("tensor '" + label + "': reducescatter scale factors on " +
                              in.device().to_string() +
                              " tensors are not supported yet (host tensors only)");
  return s;
}

const char* kNotInit = " called before hora::init() or after hora::shutdown()";

// The engine a call on one process set enqueues to, held for the call, and the set (null for
// the global set), whose context its handle carries.
struct Target {
  std::shared_ptr<engine::Engine> engine;
  std::shared_ptr<const ProcessSetInfo> set;
};

// The target of a call on set `id`, or why this rank cannot make it there: hora not
// initialised, an id not registered, or this rank not a member. `what`: "allgather of 'x'".
StatusOr<Target> target_of(int id, const std::string& what) {
  Target t;
  if (id == kGlobalProcessSet) {
    t.engine = detail::engine();
    if (!t.engine) return Status::failed_precondition(what + kNotInit);
    return t;
  }
  ProcessSetTable* table = detail::process_set_table();
  if (table == nullptr) return Status::failed_precondition(what + kNotInit);
  t.set = table->find(id);
  if (!t.set)
    return Status::invalid_argument(what + ": process set " + std::to_string(id) +
                                    " is not registered (never added, or removed already)");
  if (!t.set->engine)
    return Status::invalid_argument(what + ": rank " + std::to_string(hora::rank()) +
                                    " is not a member of " + t.set->name() +
                                    "; only its members may call collectives on it");
  t.engine = t.set->engine;
  return t;
}

std::shared_ptr<detail::HandleState> new_handle(const Target& t, const std::string& name,
                                                int parts) {
  auto handle =
      engine::make_handle_state(name, parts, t.engine->timeout_s(), t.engine->wait_signal());
  if (t.set) handle->set_context = t.set->context;
  return handle;
}

// allreduce_async on a process set other than the global one: through its engine's queue.
Handle allreduce_on_set(const std::string& given, const TensorView& in, const TensorView& out,
                        const AllreduceOptions& options) {
  std::string unnamed, drawn;
  const std::string& label = label_of(given, CollectiveType::kAllreduce, &unnamed);
  auto target = target_of(options.process_set, "allreduce of '" + label + "'");
  if (!target.ok()) return fail(label, target.status());
  const Target& t = target.value();
  Status s = check_allreduce_call(label, in, out, options);
  if (!s.ok()) return fail(label, s);
  const std::string& name = resolve_name(given, CollectiveType::kAllreduce, &drawn, t.set.get());
  auto handle = new_handle(t, name, 1);
  std::vector<Entry>& entries = one_entry();
  add_allreduce_entry(entries, name, in, out, handle, options);
  return submit(*t.engine, entries, std::move(handle));
}

}  // namespace

Handle allreduce_async(const std::string& given, const TensorView& in, const TensorView& out,
                       ReduceOp op, double prescale, double postscale) {
  return allreduce_async(given, in, out,
                         AllreduceOptions{op, prescale, postscale, Compression::kNone});
}

Handle allreduce_async(const std::string& given, const TensorView& in, const TensorView& out,
                       const AllreduceOptions& options) {
  if (options.process_set != kGlobalProcessSet) return allreduce_on_set(given, in, out, options);
  std::string unnamed, drawn;
  const std::string& label = label_of(given, CollectiveType::kAllreduce, &unnamed);
  const detail::EngineLease lease;  // held until return: the enqueue does not block
  engine::Engine* const eng = lease.get();
  if (eng == nullptr)
    return fail(label, Status::failed_precondition("allreduce of '" + label + "'" + kNotInit));
  Status s = check_allreduce_call(label, in, out, options);
  if (!s.ok()) return fail(label, s);
  const std::string& name = resolve_name(given, CollectiveType::kAllreduce, &drawn);
  auto handle = engine::make_handle_state(name, 1, eng->timeout_s(), eng->wait_signal());
  if (in.device().is_cpu() && out.device().is_cpu()) {
    // Host tensors: the queue fills the entry in place (no Entry built, moved and destroyed).
    engine::AllreduceSpec spec;
    spec.name = &name;
    spec.in = &in;
    spec.out = &out;
    spec.handle = handle;
    spec.op = options.op;
    spec.prescale = options.prescale;
    spec.postscale = options.postscale;
    spec.compression = options.compression;
    spec.enqueued = eng->enqueue_stamp();
    s = eng->enqueue_allreduce(std::move(spec));
    if (!s.ok()) return fail(name, s);
    return detail::HandleAccess::make(std::move(handle));
  }
  std::vector<Entry>& entries = one_entry();
  add_allreduce_entry(entries, name, in, out, handle, options);
  return submit(*eng, entries, std::move(handle));
}

Handle grouped_allreduce_async(const std::vector<std::string>& names,
                               const std::vector<TensorView>& ins,
                               const std::vector<TensorView>& outs, ReduceOp op, double prescale,
                               double postscale) {
  return grouped_allreduce_async(names, ins, outs,
                                 AllreduceOptions{op, prescale, postscale, Compression::kNone});
}

Handle grouped_allreduce_async(const std::vector<std::string>& names,
                               const std::vector<TensorView>& ins,
                               const std::vector<TensorView>& outs,
                               const AllreduceOptions& options) {
  const std::string label = names.empty() ? "<empty group>" : names[0];
  auto target = target_of(options.process_set, "grouped allreduce of '" + label + "'");
  if (!target.ok()) return fail(label, target.status());
  const Target& t = target.value();
  if (names.empty() || names.size() != ins.size() || names.size() != outs.size())
    return fail(label, Status::invalid_argument(
                           "grouped allreduce needs as many names as inputs and outputs, at "
                           "least one; got " +
                           std::to_string(names.size()) + " names, " + std::to_string(ins.size()) +
                           " inputs, " + std::to_string(outs.size()) + " outputs"));
  for (size_t i = 0; i < names.size(); ++i) {
    std::string unnamed;
    const std::string& label = label_of(names[i], CollectiveType::kAllreduce, &unnamed);
    Status s = check_allreduce_call(label, ins[i], outs[i], options);
    if (!s.ok())
      return fail(label_of(names[0], CollectiveType::kAllreduce, &unnamed) + "#group", s);
  }
  std::vector<std::string> resolved;
  resolved.reserve(names.size());
  std::string drawn;
  for (const std::string& n : names)
    resolved.push_back(resolve_name(n, CollectiveType::kAllreduce, &drawn, t.set.get()));
  const std::string key = resolved[0] + "#group";
  auto handle = new_handle(t, key, static_cast<int>(names.size()));
  std::vector<Entry> entries;
  entries.reserve(resolved.size());
  for (size_t i = 0; i < resolved.size(); ++i) {
    Entry& e = add_allreduce_entry(entries, resolved[i], ins[i], outs[i], handle, options);
    e.request.group_key = key;
    e.request.group_size = static_cast<int32_t>(resolved.size());
  }
  return submit(*t.engine, entries, std::move(handle));
}

std::vector<Handle> allreduce_async_batch(const std::vector<std::string>& names,
                                          const std::vector<TensorView>& ins,
                                          const std::vector<TensorView>& outs,
                                          const AllreduceOptions& options) {
  const size_t n = names.size();
  // Every handle fails with `s`, each under its own label.
  auto fail_all = [&](const Status& s) {
    std::vector<Handle> out;
    out.reserve(n);
    std::string unnamed;
    for (const std::string& name : names)
      out.push_back(fail(label_of(name, CollectiveType::kAllreduce, &unnamed), s));
    return out;
  };
  auto target = target_of(options.process_set, "batched allreduce");
  if (!target.ok()) return fail_all(target.status());
  const Target& t = target.value();
  if (n != ins.size() || n != outs.size())
    return fail_all(Status::invalid_argument(
        "batched allreduce needs as many names as inputs and outputs; got " + std::to_string(n) +
        " names, " + std::to_string(ins.size()) + " inputs, " + std::to_string(outs.size()) +
        " outputs"));
  for (size_t i = 0; i < n; ++i) {
    std::string unnamed;
    const std::string& label = label_of(names[i], CollectiveType::kAllreduce, &unnamed);
    Status s = check_allreduce_call(label, ins[i], outs[i], options);
    if (!s.ok()) return fail_all(s);
  }
  std::vector<Handle> handles;
  handles.reserve(n);
  std::vector<Entry> entries;
  entries.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::string drawn;
    const std::string& name =
        resolve_name(names[i], CollectiveType::kAllreduce, &drawn, t.set.get());
    auto handle = new_handle(t, name, 1);
    add_allreduce_entry(entries, name, ins[i], outs[i], handle, options);
    handles.push_back(detail::HandleAccess::make(std::move(handle)));
  }
  return submit_batch(*t.engine, entries, std::move(handles));
}

Handle allgather_async(const std::string& given, const TensorView& in, OutputAllocator allocate,
                       int process_set) {
  std::string unnamed, drawn;
  const std::string& label = label_of(given, CollectiveType::kAllgather, &unnamed);
  auto target = target_of(process_set, "allgather of '" + label + "'");
  if (!target.ok()) return fail(label, target.status());
  const Target& t = target.value();
  Status s = check_tensor(label, "input", in, CollectiveType::kAllgather, true);
  if (!s.ok()) return fail(label, s);
  const std::string& name = resolve_name(given, CollectiveType::kAllgather, &drawn, t.set.get());
  auto handle = new_handle(t, name, 1);
  std::vector<Entry>& entries = one_entry();
  add_entry(entries, name, CollectiveType::kAllgather, in, in, handle).allocate =
      std::move(allocate);
  return submit(*t.engine, entries, std::move(handle));
}

// The set's index of the broadcast root `root` (a global rank), or why it cannot be the root.
StatusOr<int> root_in(const Target& t, const std::string& label, int root) {
  const int set_root = t.set ? t.set->set_rank_of(root) : root;
  if (t.set && set_root < 0)
    return Status::invalid_argument("tensor '" + label + "': broadcast root " +
                                    std::to_string(root) + " is not a member of " + t.set->name());
  if (set_root < 0 || set_root >= t.engine->size())
    return Status::invalid_argument("tensor '" + label + "': broadcast root " +
                                    std::to_string(root) + " is not a rank of this job (0.." +
                                    std::to_string(t.engine->size() - 1) + ")");
  return set_root;
}

Handle broadcast_async(const std::string& given, const TensorView& tensor, int root,
                       int process_set) {
  std::string unnamed, drawn;
  const std::string& label = label_of(given, CollectiveType::kBroadcast, &unnamed);
  auto target = target_of(process_set, "broadcast of '" + label + "'");
  if (!target.ok()) return fail(label, target.status());
  const Target& t = target.value();
  Status s = check_tensor(label, "tensor", tensor, CollectiveType::kBroadcast, false);
  if (!s.ok()) return fail(label, s);
  StatusOr<int> set_root = root_in(t, label, root);
  if (!set_root.ok()) return fail(label, set_root.status());
  const std::string& name = resolve_name(given, CollectiveType::kBroadcast, &drawn, t.set.get());
  auto handle = new_handle(t, name, 1);
  std::vector<Entry>& entries = one_entry();
  add_entry(entries, name, CollectiveType::kBroadcast, tensor, tensor, handle).request.root =
      set_root.value();
  return submit(*t.engine, entries, std::move(handle));
}

Handle alltoall_async(const std::string& given, const TensorView& in,
                      const std::vector<int64_t>& splits, OutputAllocator allocate,
                      int process_set) {
  std::string unnamed, drawn;
  const std::string& label = label_of(given, CollectiveType::kAlltoall, &unnamed);
  auto target = target_of(process_set, "alltoall of '" + label + "'");
  if (!target.ok()) return fail(label, target.status());
  const Target& t = target.value();
  Status s = check_tensor(label, "input", in, CollectiveType::kAlltoall, true);
  if (!s.ok()) return fail(label, s);
  const int size = t.engine->size();
  const int64_t rows = in.shape()[0];
  std::vector<int64_t> resolved = splits;
  if (resolved.empty()) {
    if (rows % size != 0)
      return fail(label,
                  Status::invalid_argument("tensor '" + label +
                                           "': alltoall without splits needs the first "
                                           "dimension " +
                                           std::to_string(rows) + " to divide evenly by the " +
                                           std::to_string(size) + " ranks; pass splits"));
    resolved.assign(size, rows / size);
  }
  int64_t sum = 0;
  for (int64_t v : resolved) {
    if (v < 0)
      return fail(label, Status::invalid_argument("tensor '" + label + "': alltoall split " +
                                                  std::to_string(v) + " is negative"));
    sum += v;
  }
  if (static_cast<int>(resolved.size()) != size || sum != rows)
    return fail(label, Status::invalid_argument(
                           "tensor '" + label + "': alltoall needs one split per rank (" +
                           std::to_string(size) + ") summing to the first dimension " +
                           std::to_string(rows) + ", got " + std::to_string(resolved.size()) +
                           " splits summing to " + std::to_string(sum)));
  const std::string& name = resolve_name(given, CollectiveType::kAlltoall, &drawn, t.set.get());
  auto handle = new_handle(t, name, 1);
  std::vector<Entry>& entries = one_entry();
  Entry& e = add_entry(entries, name, CollectiveType::kAlltoall, in, in, handle);
  e.request.splits = std::move(resolved);
  e.allocate = std::move(allocate);
  return submit(*t.engine, entries, std::move(handle));
}

Handle reducescatter_async(const std::string& given, const TensorView& in, ReduceOp op,
                           OutputAllocator allocate, int process_set) {
  return reducescatter_async(given, in, op, 1.0, 1.0, std::move(allocate), process_set);
}

Handle reducescatter_async(const std::string& given, const TensorView& in, ReduceOp op,
                           double prescale, double postscale, OutputAllocator allocate,
                           int process_set) {
  std::string unnamed, drawn;
  const std::string& label = label_of(given, CollectiveType::kReducescatter, &unnamed);
  auto target = target_of(process_set, "reducescatter of '" + label + "'");
  if (!target.ok()) return fail(label, target.status());
  const Target& t = target.value();
  Status s = check_reducescatter(label, in, op, prescale, postscale);
  if (!s.ok()) return fail(label, s);
  const std::string& name =
      resolve_name(given, CollectiveType::kReducescatter, &drawn, t.set.get());
  auto handle = new_handle(t, name, 1);
  std::vector<Entry>& entries = one_entry();
  Entry& e = add_entry(entries, name, CollectiveType::kReducescatter, in, in, handle);
  e.request.op = op;
  e.request.prescale = prescale;
  e.request.postscale = postscale;
  e.allocate = std::move(allocate);
  return submit(*t.engine, entries, std::move(handle));
}

namespace {

// Allgathers or reducescatters (`type`) enqueued in one batch, one handle each: `check` runs
// on every input first, then either every entry is enqueued or none (a name in flight, or
// twice in `names`), so every handle is then failed with the one error. `set` fills an
// entry's collective-specific fields.
std::vector<Handle> enqueue_batch(
    CollectiveType type, const std::vector<std::string>& names, const std::vector<TensorView>& ins,
    std::vector<OutputAllocator>& allocators, int process_set,
    const std::function<Status(const std::string&, const TensorView&)>& check,
    const std::function<void(Entry&)>& set) {
  const size_t n = names.size();
  auto fail_all = [&](const Status& s) {
    std::vector<Handle> out;
    std::string unnamed;
    out.reserve(names.size());
    for (const std::string& name : names) out.push_back(fail(label_of(name, type, &unnamed), s));
    return out;
  };
  auto target = target_of(process_set, std::string("batched ") + engine::collective_name(type));
  if (!target.ok()) return fail_all(target.status());
  const Target& t = target.value();
  if (n != ins.size() || n != allocators.size())
    return fail_all(
        Status::invalid_argument(std::string("batched ") + engine::collective_name(type) +
                                 " needs as many names as inputs and allocators; got " +
                                 std::to_string(n) + " names, " + std::to_string(ins.size()) +
                                 " inputs, " + std::to_string(allocators.size()) + " allocators"));
  for (size_t i = 0; i < n; ++i) {
    std::string unnamed;
    Status s = check(label_of(names[i], type, &unnamed), ins[i]);
    if (!s.ok()) return fail_all(s);
  }
  std::vector<Handle> handles;
  std::vector<Entry> entries;
  entries.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::string drawn;
    const std::string& name = resolve_name(names[i], type, &drawn, t.set.get());
    auto handle = new_handle(t, name, 1);
    Entry& e = add_entry(entries, name, type, ins[i], ins[i], handle);
    e.allocate = std::move(allocators[i]);
    set(e);
    handles.push_back(detail::HandleAccess::make(std::move(handle)));
  }
  return submit_batch(*t.engine, entries, std::move(handles));
}

}  // namespace

std::vector<Handle> allgather_async_batch(const std::vector<std::string>& names,
                                          const std::vector<TensorView>& ins,
                                          std::vector<OutputAllocator> allocators,
                                          int process_set) {
  auto check = [](const std::string& label, const TensorView& in) {
    return check_tensor(label, "input", in, CollectiveType::kAllgather, true);
  };
  return enqueue_batch(CollectiveType::kAllgather, names, ins, allocators, process_set, check,
                       [](Entry&) {});
}

std::vector<Handle> reducescatter_async_batch(const std::vector<std::string>& names,
                                              const std::vector<TensorView>& ins, ReduceOp op,
                                              double prescale, double postscale,
                                              std::vector<OutputAllocator> allocators,
                                              int process_set) {
  auto check = [&](const std::string& label, const TensorView& in) {
    return check_reducescatter(label, in, op, prescale, postscale);
  };
  auto set = [&](Entry& e) {
    e.request.op = op;
    e.request.prescale = prescale;
    e.request.postscale = postscale;
  };
  return enqueue_batch(CollectiveType::kReducescatter, names, ins, allocators, process_set, check,
                       set);
}

Status allreduce(const std::string& name, const TensorView& in, const TensorView& out, ReduceOp op,
                 double prescale, double postscale) {
  return allreduce_async(name, in, out, op, prescale, postscale).wait();
}

Status grouped_allreduce(const std::vector<std::string>& names, const std::vector<TensorView>& ins,
                         const std::vector<TensorView>& outs, ReduceOp op, double prescale,
                         double postscale) {
  return grouped_allreduce_async(names, ins, outs, op, prescale, postscale).wait();
}

Status allreduce(const std::string& name, const TensorView& in, const TensorView& out,
                 const AllreduceOptions& options) {
  return allreduce_async(name, in, out, options).wait();
}

Status broadcast(const std::string& name, const TensorView& tensor, int root, int process_set) {
  return broadcast_async(name, tensor, root, process_set).wait();
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

StatusOr<CollectiveResult> allgather(const std::string& name, const TensorView& in,
                                     int process_set) {
  return result_of(allgather_async(name, in, nullptr, process_set));
}

StatusOr<CollectiveResult> alltoall(const std::string& name, const TensorView& in,
                                    const std::vector<int64_t>& splits, int process_set) {
  return result_of(alltoall_async(name, in, splits, nullptr, process_set));
}

StatusOr<CollectiveResult> reducescatter(const std::string& name, const TensorView& in, ReduceOp op,
                                         double prescale, double postscale, int process_set) {
  return result_of(reducescatter_async(name, in, op, prescale, postscale, nullptr, process_set));
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

Handle control_request(const Target& t, CollectiveType type, const std::string& name) {
  auto handle = new_handle(t, name, 1);
  std::vector<Entry>& entries = one_entry();
  Entry& e = entries.emplace_back();
  e.request.name = name;
  e.request.type = type;
  e.request.dtype = DataType::kUint8;
  e.handle = handle;
  e.enqueued = engine::Clock::now();
  return submit(*t.engine, entries, std::move(handle));
}

// A barrier or join that a blocking call with a timeout gave up on. It is still in flight
// (the other ranks may yet arrive), so the next call of that kind on the same set takes it
// over rather than enqueueing another one that no other rank would match. It belongs to the
// engine that runs it: after shutdown and init (or a set removed and another added) it is
// forgotten.
struct PendingControl {
  std::weak_ptr<engine::Engine> engine;
  Handle handle;  // invalid when none is pending
};

struct PendingControls {
  Mutex mu;
  // By (collective type, process set id).
  std::map<std::pair<int, int>, PendingControl> pending HORA_GUARDED_BY(mu);
};

PendingControls& pending_controls() {
  static PendingControls* p = new PendingControls();  // never destroyed: handles may outlive exit
  return *p;
}

// The pending barrier (join) of this set's engine, or a new one.
Handle take_or_request(CollectiveType type, int process_set) {
  const std::string what = std::string(engine::collective_name(type));
  auto target = target_of(process_set, what);
  if (!target.ok()) return fail("hora." + what, target.status());
  const Target& t = target.value();
  PendingControls& p = pending_controls();
  {
    MutexLock lock(&p.mu);
    auto it = p.pending.find({static_cast<int>(type), process_set});
    if (it != p.pending.end()) {
      PendingControl pending = std::move(it->second);
      p.pending.erase(it);
      if (pending.handle.valid() && pending.engine.lock() == t.engine) return pending.handle;
    }
  }
  std::string drawn;
  const std::string name = type == CollectiveType::kJoin
                               ? std::string("hora.join")
                               : resolve_name("", CollectiveType::kBarrier, &drawn, t.set.get());
  return control_request(t, type, name);
}

// Waits up to `timeout`; when the handle is still not complete, leaves it pending for the next
// call of its kind on the set and returns kTimeout.
Status wait_or_keep(CollectiveType type, int process_set, Handle& h,
                    std::chrono::milliseconds timeout) {
  (void)h.wait(timeout);
  if (h.poll()) return h.wait(std::chrono::milliseconds(0));
  auto target = target_of(process_set, engine::collective_name(type));
  if (target.ok()) {
    PendingControls& p = pending_controls();
    MutexLock lock(&p.mu);
    p.pending[{static_cast<int>(type), process_set}] = PendingControl{target.value().engine, h};
  }
  return Status::timeout(std::string(engine::collective_name(type)) + " ('" + h.name() +
                         "'): not every rank arrived within " + std::to_string(timeout.count()) +
                         " ms; it stays pending, and the next " + engine::collective_name(type) +
                         " call on this rank waits for it again");
}

double engine_timeout_s(int process_set) {
  auto target = target_of(process_set, "");
  return target.ok() ? target.value().engine->timeout_s() : 1.0;
}

}  // namespace

Status barrier() { return barrier(std::chrono::milliseconds::max(), kGlobalProcessSet); }

Status barrier(std::chrono::milliseconds timeout) { return barrier(timeout, kGlobalProcessSet); }

Status barrier(std::chrono::milliseconds timeout, int process_set) {
  Handle h = take_or_request(CollectiveType::kBarrier, process_set);
  if (timeout == std::chrono::milliseconds::max())
    return wait_while_alive(h, engine_timeout_s(process_set));
  return wait_or_keep(CollectiveType::kBarrier, process_set, h, timeout);
}

Handle barrier_async(int process_set) {
  return take_or_request(CollectiveType::kBarrier, process_set);
}

StatusOr<int> join() { return join(std::chrono::milliseconds::max(), kGlobalProcessSet); }

StatusOr<int> join(std::chrono::milliseconds timeout) { return join(timeout, kGlobalProcessSet); }

StatusOr<int> join(std::chrono::milliseconds timeout, int process_set) {
  Handle h = take_or_request(CollectiveType::kJoin, process_set);
  if (timeout == std::chrono::milliseconds::max()) {
    HORA_RETURN_IF_ERROR(wait_while_alive(h, engine_timeout_s(process_set)));
  } else {
    HORA_RETURN_IF_ERROR(wait_or_keep(CollectiveType::kJoin, process_set, h, timeout));
  }
  return h.last_joined();
}

Handle join_async(int process_set) { return take_or_request(CollectiveType::kJoin, process_set); }

EngineStats engine_stats() {
  auto eng = detail::engine();
  return eng ? eng->stats() : EngineStats{};
}

AutotuneState autotune_state() {
  auto eng = detail::engine();
  return eng ? eng->autotune_state() : AutotuneState{};
}

}  // namespace hora
