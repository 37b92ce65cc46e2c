// DeviceExecutor::run_single: allgather, alltoall and reducescatter of a tensor in GPU memory
// (device_executor.h has the contract). The counts, the output shape and the received splits
// are the host path's (executor.cc run_single), so a device tensor gets the same result.
#include <cstring>
#include <string>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "core/engine/allocated_check.h"
#include "core/engine/device_executor.h"
#include "core/engine/handle_state.h"
#include "core/engine/single_plan.h"

namespace hora {
namespace engine {
namespace {

Status with_tensor(const Status& s, const std::string& collective, const std::string& name) {
  if (s.ok()) return s;
  return Status(s.code(), collective + " of tensor '" + name + "' on the device: " + s.message());
}

// The collective of `p` over `comm` from `in` to `out`. `native`: the NCCL communicator's own
// collectives (hora's ring over it for the reductions NCCL lacks); else the host path's
// algorithms.
Status run_plan(collectives::Communicator& comm, bool native, const Response& r,
                const SinglePlan& p, const void* in, void* out,
                const collectives::AlgorithmOptions& ao) {
  if (!native) return run_host_plan(comm, r, p, in, out, ao, nullptr);
  switch (r.type) {
    case CollectiveType::kAllgather: return comm.allgatherv(in, out, p.send, r.dtype, ao.deadline);
    case CollectiveType::kAlltoall:
      return comm.alltoallv(in, p.send, out, p.recv, r.dtype, ao.deadline);
    default: {
      const bool nccl_reduces =
          r.dtype != DataType::kInt16 && r.dtype != DataType::kUint16 && r.dtype != DataType::kBool;
      return nccl_reduces ? comm.reducescatter(in, out, p.send, r.dtype, r.op, ao.deadline)
                          : run_host_plan(comm, r, p, in, out, ao, nullptr);
    }
  }
}

}  // namespace

Status DeviceExecutor::run_single(const Response& r, const CompleteFn& complete) {
  const std::string what = std::string(collective_name(r.type)) + " of '" + r.name + "'";
  Entry* e = queue_.find(r.name);
  if (e == nullptr)
    return Status::internal("tensor '" + r.name + "': agreed by every rank but not in flight");
  const DeviceSupport& support = resources_.support;
  if (support.mode == DeviceMode::kNone)  // admit() refused such tensors
    return Status::failed_precondition(what + " on " + r.device.to_string() +
                                       ": this rank has no GPU path: " + support.why_none);
  const bool native = support.mode == DeviceMode::kNative;
  const int device = support.device;
  DeviceRuntime* rt = resources_.runtime;
  detail::HandleState& h = *e->handle;
  const SinglePlan p = plan_single(r, *e, host_comm_.rank(), host_comm_.size(), &h.received_splits);
  const size_t elem = data_type_bytes(r.dtype);
  const size_t in_bytes = p.in_count * elem, out_bytes = p.out_count * elem;

  // Where the result goes: the allocator's device memory, else the handle's host output.
  h.output_shape = p.shape;
  void* out = nullptr;
  Status allocator_error;
  if (e->allocate) {
    StatusOr<TensorView> view = e->allocate(r.dtype, p.shape);
    allocator_error = check_allocated(r.name, view, r.dtype, p.shape, out_bytes, e->in.device());
    if (allocator_error.ok()) out = view.value().data();
  }
  const bool to_host = out == nullptr && out_bytes > 0;
  if (to_host) h.output.resize(out_bytes);

  // A device buffer for the result when it goes to the host (native) -- the fusion buffer.
  HORA_ASSIGN_OR_RETURN(PerDevice * d, device_state(device, native && to_host ? out_bytes : 0));
  HORA_RETURN_IF_ERROR(wait_ready(device, *d, *e));
  const auto start = Clock::now();
  if (native) {
    // NCCL runs on its communicator's stream: the host waits for the input first; the
    // communicator returns once its collective completed on the GPU.
    HORA_RETURN_IF_ERROR(host_wait(device, *d, what + " (ready)"));
    void* dst = to_host ? d->fusion : out;
    HORA_RETURN_IF_ERROR(with_tensor(
        run_plan(*resources_.device_comm, true, r, p, e->in.data(), dst, algorithm_options()),
        collective_name(r.type), r.name));
    if (to_host)
      HORA_RETURN_IF_ERROR(rt->memcpy_async(device, h.output.data(), dst, out_bytes, d->stream));
    ++stats_.native_buckets;
  } else {
    HORA_RETURN_IF_ERROR(ensure_pinned(in_bytes + out_bytes));
    uint8_t* pin_in = static_cast<uint8_t*>(pinned_);
    uint8_t* pin_out = pin_in + in_bytes;
    HORA_RETURN_IF_ERROR(rt->memcpy_async(device, pin_in, e->in.data(), in_bytes, d->stream));
    HORA_RETURN_IF_ERROR(host_wait(device, *d, what + " (copy to host)"));
    HORA_RETURN_IF_ERROR(with_tensor(
        run_plan(host_comm_, false, r, p, pin_in, pin_out, algorithm_options()),
        std::string(collective_name(r.type)) + " (staged through host memory)", r.name));
    if (to_host)
      std::memcpy(h.output.data(), pin_out, out_bytes);
    else
      HORA_RETURN_IF_ERROR(rt->memcpy_async(device, out, pin_out, out_bytes, d->stream));
    ++stats_.staged_buckets;
  }
  if (timeline_ != nullptr && timeline_->enabled()) {
    const std::string phase = timeline_phase(r.type);
    timeline_->event(
        r.name, phase.c_str(), start, Clock::now(),
        {{"backend", native ? resources_.device_comm->backend_name() : host_comm_.backend_name()},
         {"device_path", native ? "nccl" : "staged"},
         {"bytes", std::to_string(out_bytes)}});
  }
  (void)complete;  // the finalizer completes the handle once the result is written
  return finish(device, *d, {e}, what, std::move(allocator_error));
}

}  // namespace engine
}  // namespace hora
