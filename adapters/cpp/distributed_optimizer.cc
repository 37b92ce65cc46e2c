// DistributedOptimizer: per-parameter accumulation counts, compression buffers and handles.
#include "adapters/cpp/distributed_optimizer.h"

#include <algorithm>
#include <set>
#include <utility>

#include "kernels/kernels.h"

namespace hora {

struct DistributedOptimizer::Slot {
  Parameter param;
  int passes = 0;         // backward passes seen since the last step
  bool enqueued = false;  // its allreduce is in flight
  Handle handle;
  std::vector<uint16_t> compressed;  // float16/bfloat16 copy while compressed
};

StatusOr<Compression> parse_compression(const std::string& text) {
  if (text == "none") return Compression::kNone;
  if (text == "fp16" || text == "float16") return Compression::kFloat16;
  if (text == "bf16" || text == "bfloat16") return Compression::kBFloat16;
  return Status::invalid_argument("compression '" + text + "': expected none, fp16 or bf16");
}

const char* compression_name(Compression compression) {
  switch (compression) {
    case Compression::kNone:
      return "none";
    case Compression::kFloat16:
      return "fp16";
    case Compression::kBFloat16:
      return "bf16";
  }
  return "?";
}

StatusOr<std::unique_ptr<DistributedOptimizer>> DistributedOptimizer::create(
    Optimizer& inner, DistributedOptions options) {
  const std::string who = "DistributedOptimizer: ";
  if (options.op != ReduceOp::kAverage && options.op != ReduceOp::kSum)
    return Status::invalid_argument(who + "op " + reduce_op_name(options.op) +
                                    ", expected average or sum");
  if (options.backward_passes_per_step < 1)
    return Status::invalid_argument(who + "backward_passes_per_step is " +
                                    std::to_string(options.backward_passes_per_step) +
                                    ", expected >= 1");
  if (!(options.gradient_predivide_factor > 0.0))
    return Status::invalid_argument(who + "gradient_predivide_factor is " +
                                    std::to_string(options.gradient_predivide_factor) +
                                    ", expected > 0");
  if (options.gradient_predivide_factor != 1.0 && options.op != ReduceOp::kAverage)
    return Status::invalid_argument(
        who + "gradient_predivide_factor " + std::to_string(options.gradient_predivide_factor) +
        " needs op average (it splits the average), not " + reduce_op_name(options.op));
  std::set<std::string> seen;
  const std::vector<Parameter>& params = inner.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].name.empty())
      return Status::invalid_argument(who + "parameter " + std::to_string(i) + " of " +
                                      std::to_string(params.size()) +
                                      " has no name; every parameter needs a unique name, the "
                                      "same on every rank");
    if (!seen.insert(params[i].name).second)
      return Status::invalid_argument(who + "parameter name '" + params[i].name +
                                      "' appears twice; names must be unique");
  }
  return std::unique_ptr<DistributedOptimizer>(new DistributedOptimizer(inner, std::move(options)));
}

DistributedOptimizer::DistributedOptimizer(Optimizer& inner, DistributedOptions options)
    : inner_(inner),
      options_(std::move(options)),
      name_(std::string("distributed(") + inner.name() + ")") {
  for (const Parameter& p : inner_.parameters()) {
    slots_.emplace_back();
    slots_.back().param = p;
    if (options_.compression != Compression::kNone) slots_.back().compressed.resize(p.count);
  }
  for (size_t i = 0; i < slots_.size(); ++i) index_.emplace_back(slots_[i].param.name, i);
  std::sort(index_.begin(), index_.end());
}

DistributedOptimizer::~DistributedOptimizer() {
  // Buffers must not disappear under the engine: wait for whatever is still in flight.
  for (Slot& slot : slots_)
    if (slot.enqueued) (void)slot.handle.wait();
}

std::function<Status(const std::string&)> DistributedOptimizer::hook() {
  return [this](const std::string& name) { return gradient_ready(name); };
}

Status DistributedOptimizer::gradient_ready(const std::string& name) {
  auto it = std::lower_bound(index_.begin(), index_.end(), std::make_pair(name, size_t{0}));
  if (it == index_.end() || it->first != name)
    return Status::invalid_argument(
        "DistributedOptimizer: gradient of '" + name + "' reported, but it is not one of the " +
        std::to_string(slots_.size()) + " parameters this optimizer was created with");
  Slot& slot = slots_[it->second];
  if (slot.enqueued || slot.passes >= options_.backward_passes_per_step)
    return Status::failed_precondition(
        "DistributedOptimizer: the gradient of '" + name +
        "' was computed more than "
        "backward_passes_per_step (" +
        std::to_string(options_.backward_passes_per_step) +
        ") times before step(); raise backward_passes_per_step to accumulate gradients locally");
  ++slot.passes;
  if (options_.overlap_backward && slot.passes == options_.backward_passes_per_step)
    return enqueue(slot);
  return Status::ok();
}

Status DistributedOptimizer::enqueue(Slot& slot) {
  const Parameter& p = slot.param;
  double prescale = 1.0, postscale = 1.0;
  if (options_.op == ReduceOp::kAverage) {
    // The engine's average multiplies the postscale by 1/size.
    prescale = 1.0 / options_.gradient_predivide_factor;
    postscale = options_.gradient_predivide_factor;
  }
  if (options_.average_aggregated_gradients)
    prescale /= static_cast<double>(options_.backward_passes_per_step);

  void* data = p.grad;
  DataType dtype = DataType::kFloat32;
  if (options_.compression == Compression::kFloat16) {
    kernels::cast_f32_to_f16(slot.compressed.data(), p.grad, static_cast<size_t>(p.count));
    data = slot.compressed.data();
    dtype = DataType::kFloat16;
  } else if (options_.compression == Compression::kBFloat16) {
    kernels::cast_f32_to_bf16(slot.compressed.data(), p.grad, static_cast<size_t>(p.count));
    data = slot.compressed.data();
    dtype = DataType::kBFloat16;
  }
  HORA_ASSIGN_OR_RETURN(TensorView view, TensorView::flat(data, dtype, p.count));
  slot.handle =
      allreduce_async(options_.name_prefix + p.name, view, view, options_.op, prescale, postscale);
  slot.enqueued = true;
  return Status::ok();
}

Status DistributedOptimizer::synchronize() {
  Status first_error;
  for (Slot& slot : slots_) {
    if (slot.enqueued) continue;
    Status s = enqueue(slot);
    if (!s.is_ok() && first_error.is_ok()) first_error = s;
  }
  for (Slot& slot : slots_) {
    if (!slot.enqueued) continue;
    Status s = slot.handle.wait();
    if (s.code() == StatusCode::kTimeout) {
      // Still pending: the engine may yet write the buffer, so keep the handle (the next
      // synchronize, or the destructor, waits for it again).
      if (first_error.is_ok())
        first_error =
            s.with_context("DistributedOptimizer: allreduce of '" + slot.param.name + "'");
      continue;
    }
    slot.enqueued = false;
    slot.passes = 0;
    slot.handle = Handle();
    if (!s.is_ok()) {
      if (first_error.is_ok())
        first_error =
            s.with_context("DistributedOptimizer: allreduce of '" + slot.param.name + "'");
      continue;
    }
    const size_t count = static_cast<size_t>(slot.param.count);
    if (options_.compression == Compression::kFloat16)
      kernels::cast_f16_to_f32(slot.param.grad, slot.compressed.data(), count);
    else if (options_.compression == Compression::kBFloat16)
      kernels::cast_bf16_to_f32(slot.param.grad, slot.compressed.data(), count);
  }
  for (Slot& slot : slots_)
    if (!slot.enqueued) slot.passes = 0;
  return first_error;
}

Status DistributedOptimizer::zero_grad() {
  for (const Slot& slot : slots_)
    if (slot.passes > 0 || slot.enqueued)
      return Status::failed_precondition(
          "DistributedOptimizer: zero_grad() called after backward but before step() or "
          "synchronize() (the gradient of '" +
          slot.param.name + "' is accumulated or being reduced); call zero_grad before backward");
  return inner_.zero_grad();
}

Status DistributedOptimizer::step() {
  HORA_RETURN_IF_ERROR(synchronize());
  return inner_.step();
}

}  // namespace hora
