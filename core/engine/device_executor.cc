#include "core/engine/device_executor.h"

#include <cstring>
#include <functional>
#include <utility>

#include "collectives/algorithms/algorithms.h"
#include "core/engine/allreduce_plan.h"
#include "core/engine/handle_state.h"
#include "hora/compression.h"

namespace hora {
namespace engine {
namespace {

Status with_tensor(const Status& s, const char* collective, const std::string& name) {
  if (s.ok()) return s;
  return Status(s.code(), std::string(collective) + " of tensor '" + name +
                              "' on the device: " + s.message());
}

}  // namespace

DeviceExecutor::DeviceExecutor(const DeviceResources& resources,
                               collectives::Communicator& host_comm,
                               const DeviceExecutorOptions& options, TensorQueue& queue,
                               Timeline* timeline)
    : resources_(resources),
      host_comm_(host_comm),
      options_(options),
      queue_(queue),
      timeline_(timeline),
      finalizer_(
          resources.runtime,
          resources.device_comm == nullptr
              ? DeviceFinalizer::HealthFn()
              : [comm = resources.device_comm] { return comm->async_error(); },
          options.timeout_s),
      ready_(resources.runtime) {}

DeviceExecutor::~DeviceExecutor() {
  drain().IgnoreError();  // its failures reached the handles
  {
    MutexLock lock(&gate_->mu);  // handles that outlive the executor no longer reach `done`
    gate_->alive = false;
  }
  DeviceRuntime* rt = resources_.runtime;
  if (rt == nullptr) return;
  for (auto& [device, d] : devices_) {
    // Nothing may still run on the stream: the finalizer saw every bucket end, or the drain's
    // deadline passed (freeing under a stuck kernel is the CUDA runtime's to order).
    rt->free_device(device, d.fusion);
    rt->destroy_event(device, d.event);
    rt->destroy_stream(device, d.stream);
  }
  rt->free_pinned(pinned_);
}

collectives::AlgorithmOptions DeviceExecutor::algorithm_options() {
  return executor_algorithm_options(options_.timeout_s, &scratch_, options_.topology);
}

Status DeviceExecutor::admit(std::vector<Entry>& entries) {
  const ReadyEvents::Ready* shared = nullptr;  // this call's record on the stream of the last
  for (Entry& e : entries) {
    const std::string& name = e.request.name;
    if (e.in.device().is_cpu() && e.out.device().is_cpu()) continue;
    HORA_ASSIGN_OR_RETURN(DevicePath path,
                          route_tensor(name, "input", e.in.device(), resources_.support));
    (void)path;
    const CollectiveType type = e.request.type;
    if (type != CollectiveType::kAllreduce && type != CollectiveType::kBroadcast &&
        type != CollectiveType::kAllgather && type != CollectiveType::kAlltoall &&
        type != CollectiveType::kReducescatter)
      return Status::unimplemented("tensor '" + name + "': " + collective_name(type) + " of a " +
                                   "tensor on " + e.in.device().to_string() +
                                   " has no device path");
    if (e.out.data() != nullptr && e.out.device() != e.in.device())
      return Status::invalid_argument("tensor '" + name + "': input is on " +
                                      e.in.device().to_string() + " but output is on " +
                                      e.out.device().to_string() + " (both must be on one device)");
    if (e.request.compression != Compression::kNone && e.request.dtype != DataType::kFloat32)
      return Status::invalid_argument("tensor '" + name + "': compression " +
                                      compression_name(e.request.compression) + " of a " +
                                      data_type_name(e.request.dtype) + " tensor on " +
                                      e.in.device().to_string() + " (float32 only)");
    // The framework's kernels that produce the input run on its stream: record where they end,
    // so the engine's stream can wait for exactly that on the GPU. The tensors of one call are
    // all ready by the time it was made: one record per stream serves them all.
    if (shared != nullptr && shared->stream == e.in.stream()) {
      e.ready = *shared;
      continue;
    }
    StatusOr<ReadyEvents::Ready> ready = ready_.record(e.in.device().index, e.in.stream());
    if (!ready.ok())
      return Status(ready.status().code(), "tensor '" + name + "': recording its ready event: " +
                                               ready.status().message());
    e.ready = std::move(ready).value();
    shared = &e.ready;
  }
  return Status::OK();
}

StatusOr<DeviceExecutor::PerDevice*> DeviceExecutor::device_state(int device, size_t fusion_bytes) {
  DeviceRuntime* rt = resources_.runtime;
  auto it = devices_.find(device);
  if (it == devices_.end()) {
    PerDevice d;
    HORA_ASSIGN_OR_RETURN(d.stream, rt->create_stream(device));
    StatusOr<DeviceEvent> event = rt->create_event(device);
    if (!event.ok()) {
      rt->destroy_stream(device, d.stream);
      return event.status();
    }
    d.event = event.value();
    it = devices_.emplace(device, d).first;
  }
  PerDevice& d = it->second;
  if (d.fusion_bytes < fusion_bytes) {
    HORA_RETURN_IF_ERROR(drain_for("growing the device fusion buffer"));
    rt->free_device(device, d.fusion);
    d.fusion = nullptr;
    d.fusion_bytes = 0;
    HORA_ASSIGN_OR_RETURN(d.fusion, rt->alloc_device(device, fusion_bytes));
    d.fusion_bytes = fusion_bytes;
  }
  return &d;
}

Status DeviceExecutor::ensure_pinned(size_t bytes) {
  if (pinned_bytes_ >= bytes) return Status::OK();
  DeviceRuntime* rt = resources_.runtime;
  HORA_RETURN_IF_ERROR(drain_for("growing the pinned staging buffer"));
  rt->free_pinned(pinned_);
  pinned_ = nullptr;
  pinned_bytes_ = 0;
  HORA_ASSIGN_OR_RETURN(pinned_, rt->alloc_pinned(bytes));
  pinned_bytes_ = bytes;
  return Status::OK();
}

Status DeviceExecutor::drain() {
  return finalizer_.drain(Deadline::after_seconds(options_.timeout_s));
}

Status DeviceExecutor::drain_for(const char* why) {
  if (finalizer_.in_flight() == 0) return Status::OK();
  Status s = drain();
  return s.ok() ? s : Status(s.code(), std::string(why) + ": " + s.message());
}

Status DeviceExecutor::host_wait(int device, PerDevice& d, const std::string& what) {
  DeviceRuntime* rt = resources_.runtime;
  ++stats_.host_waits;
  HORA_RETURN_IF_ERROR(rt->record_event(device, d.event, d.stream));
  return rt->wait_event(device, d.event, Deadline::after_seconds(options_.timeout_s), what);
}

Status DeviceExecutor::wait_ready(int device, PerDevice& d, Entry& e) {
  if (e.ready.event == nullptr) return Status::OK();
  std::vector<ReadyEvents::Ready> ready(1);
  ready[0] = std::move(e.ready);
  ++stats_.ready_waits;
  return ready_.wait(device, d.stream, ready).status();
}

Status DeviceExecutor::finish(int device, PerDevice& d, const std::vector<Entry*>& entries,
                              std::string what, Status status) {
  DeviceRuntime* rt = resources_.runtime;
  HORA_ASSIGN_OR_RETURN(std::shared_ptr<void> event, ready_.acquire(device));
  HORA_RETURN_IF_ERROR(rt->record_event(device, event.get(), d.stream));
  ++stats_.done_events;
  std::function<Status(void*)> waiter = [gate = gate_, rt, device,
                                         done = event.get()](void* stream) -> Status {
    MutexLock lock(&gate->mu);
    if (!gate->alive) return Status::OK();  // the executor drained every bucket
    return rt->stream_wait_event(device, stream, done);
  };
  // A grouped allreduce's handle has one part per member, maybe in several buckets: it is
  // published by the bucket holding its last parts (the buckets run in order on one stream).
  std::map<detail::HandleState*, int> parts;
  std::vector<Entry*> done_entries;
  std::vector<std::shared_ptr<detail::HandleState>> handles;
  done_entries.reserve(entries.size());
  handles.reserve(entries.size());
  for (Entry* e : entries) {
    if (e == nullptr) continue;
    ++parts[e->handle.get()];
    done_entries.push_back(e);
    handles.push_back(e->handle);
  }
  for (const auto& [h, n] : parts) {
    MutexLock lock(&h->mu);
    if (h->remaining > n) continue;
    h->stream_waiter = waiter;
    h->notify();  // a Handle::wait_on_stream waiting for it
  }
  DeviceFinalizer::Job job;
  job.device = device;
  job.event = std::move(event);
  job.what = std::move(what);
  job.complete = [queue = &queue_, done_entries = std::move(done_entries),
                  handles = std::move(handles), status = std::move(status)](const Status& outcome) {
    // Removed before completed: a caller whose wait returns may enqueue the name again at once.
    queue->remove_all(done_entries);
    for (const auto& h : handles) h->complete(outcome.ok() ? status : outcome);
  };
  if (!options_.host_waits) return finalizer_.submit(std::move(job));
  // The path before the finalizer (benchmarks): this thread waits and completes.
  ++stats_.host_waits;
  Status s = rt->wait_event(device, job.event.get(), Deadline::after_seconds(options_.timeout_s),
                            job.what);
  job.complete(s);
  return s;
}

// The steps of device_executor.h's file comment (plan_device_allreduce lists them).
Status DeviceExecutor::run_allreduce(const std::vector<Response>& responses, const Bucket& bucket,
                                     const CompleteFn& complete) {
  DeviceBucket b;
  HORA_RETURN_IF_ERROR(open_bucket(responses, bucket, &b));
  (void)complete;  // the finalizer completes the handles (finish)
  const auto start = Clock::now();
  if (b.local) {
    HORA_RETURN_IF_ERROR(copy_local(b, responses, bucket));
  } else {
    HORA_RETURN_IF_ERROR(pack(b, responses, bucket));                  // 1-2
    HORA_RETURN_IF_ERROR(reduce_bucket(b, responses, bucket, start));  // 3
    HORA_RETURN_IF_ERROR(unpack(b, responses, bucket));                // 4
  }
  std::string what = "allreduce of '" + *b.first + "'";
  if (bucket.members.size() > 1)
    what += " and " + std::to_string(bucket.members.size() - 1) + " more";
  return finish(b.device, *b.d, b.entries, std::move(what));
}

Status DeviceExecutor::wait_inputs(const DeviceBucket& b) {
  std::vector<ReadyEvents::Ready> ready_events;  // waited for together
  ready_events.reserve(b.entries.size());
  for (Entry* e : b.entries) {
    if (e != nullptr && e->ready.event != nullptr) ready_events.push_back(std::move(e->ready));
  }
  HORA_RETURN_IF_ERROR(ready_.wait(b.device, b.d->stream, ready_events).status());
  stats_.ready_waits += static_cast<int64_t>(ready_events.size());
  return Status::OK();
}

Status DeviceExecutor::copy_local(const DeviceBucket& b, const std::vector<Response>& responses,
                                  const Bucket& bucket) {
  DeviceRuntime* rt = resources_.runtime;
  const auto start = Clock::now();
  HORA_RETURN_IF_ERROR(wait_inputs(b));
  const double pre = responses[bucket.members.front()].prescale, post = b.plan.postscale;
  std::vector<DeviceCopyItem> items, in_place;
  items.reserve(b.entries.size());
  in_place.reserve(b.entries.size());
  for (size_t m = 0; m < b.entries.size(); ++m) {
    Entry* e = b.entries[m];
    if (e == nullptr) continue;  // alone, no rank joined: never
    const bool same = e->out.data() == e->in.data();
    if (!same || pre != 1.0) items.push_back({e->out.data(), e->in.data(), b.counts[m]});
    in_place.push_back({e->out.data(), e->out.data(), b.counts[m]});
  }
  HORA_RETURN_IF_ERROR(
      with_tensor(rt->batched_scale_copy_async(b.device, items, b.plan.dtype, pre, b.d->stream),
                  "allreduce (one rank)", *b.first));
  if (post != 1.0)
    HORA_RETURN_IF_ERROR(with_tensor(
        rt->batched_scale_copy_async(b.device, in_place, b.plan.dtype, post, b.d->stream),
        "allreduce (one rank, postscale)", *b.first));
  ++stats_.local_buckets;
  if (timeline_ != nullptr && timeline_->enabled())
    record_bucket(timeline_, responses, bucket, "ALLREDUCE", start,
                  allreduce_args("device_path", "local", rt->name(), b.count() * b.plan.elem,
                                 bucket.members.size()));
  return Status::OK();
}

Status DeviceExecutor::open_bucket(const std::vector<Response>& responses, const Bucket& bucket,
                                   DeviceBucket* b) {
  const Response& head = responses[bucket.members.front()];
  b->first = &head.name;
  const DeviceSupport& support = resources_.support;
  if (support.mode == DeviceMode::kNone)  // admit() refused such tensors; a peer's joined zeros
    return Status::failed_precondition("allreduce of tensor '" + head.name + "' on " +
                                       head.device.to_string() +
                                       ": this rank has no GPU path: " + support.why_none);
  // Adasum has no NCCL implementation here: its buckets are staged through host memory.
  b->path = support.mode == DeviceMode::kNative && head.op != ReduceOp::kAdasum
                ? DevicePath::kNative
                : DevicePath::kStaged;
  b->device = support.device;
  // What the collective moves and reduces: the half type of a compressed bucket, whose inputs
  // are packed in float32 behind the wire region of the fusion buffer and cast into it.
  b->plan = plan_allreduce(head, host_comm_.size());
  const bool compressed = b->plan.compressed;
  const size_t elem = b->plan.elem;
  for (int i : bucket.members) {
    b->counts.push_back(static_cast<size_t>(responses[i].element_count()));
    b->entries.push_back(queue_.find(responses[i].name));
  }
  b->layout = plan_device_allreduce(b->path, b->counts, elem);
  const size_t total = b->layout.total_bytes;
  // The float32 region starts at the next multiple of kStagingAlign behind the wire region:
  // right behind it, an odd count of 16-bit elements would leave it 2 bytes off float32
  // alignment, which the GPU's cast and copy kernels refuse.
  constexpr size_t kStagingAlign = 256;
  const size_t f32_offset =
      compressed ? (total + kStagingAlign - 1) / kStagingAlign * kStagingAlign : 0;
  const size_t f32_bytes = compressed ? total / elem * sizeof(float) : 0;
  // Alone, an uncompressed bucket is copied from its inputs to its outputs: no fusion buffer.
  b->local = host_comm_.size() == 1 && !compressed && !options_.host_waits;
  HORA_ASSIGN_OR_RETURN(b->d, device_state(b->device, b->local     ? 0
                                                      : compressed ? f32_offset + f32_bytes
                                                                   : total));
  b->fusion = static_cast<uint8_t*>(b->d->fusion);
  b->staging = compressed ? b->fusion + f32_offset : b->fusion;
  b->staging_elem = compressed ? sizeof(float) : elem;
  b->staging_dtype = compressed ? DataType::kFloat32 : b->plan.dtype;
  return Status::OK();
}

Status DeviceExecutor::pack(const DeviceBucket& b, const std::vector<Response>& responses,
                            const Bucket& bucket) {
  DeviceRuntime* rt = resources_.runtime;
  const Response& head = responses[bucket.members.front()];
  HORA_RETURN_IF_ERROR(wait_inputs(b));
  std::vector<DeviceCopyItem> in_items;
  in_items.reserve(b.entries.size());
  for (size_t m = 0; m < b.entries.size(); ++m) {
    Entry* e = b.entries[m];
    if (e == nullptr) {
      HORA_RETURN_IF_ERROR(
          rt->memset_zero_async(b.device, b.slot(m), b.counts[m] * b.staging_elem, b.d->stream));
      continue;
    }
    in_items.push_back({b.slot(m), e->in.data(), b.counts[m]});
  }
  HORA_RETURN_IF_ERROR(with_tensor(
      rt->batched_scale_copy_async(b.device, in_items, b.staging_dtype, head.prescale, b.d->stream),
      "allreduce (pack)", *b.first));
  if (b.plan.compressed) {
    HORA_RETURN_IF_ERROR(with_tensor(rt->cast_async(b.device, b.fusion, b.plan.dtype, b.staging,
                                                    DataType::kFloat32, b.count(), b.d->stream),
                                     "allreduce (compress)", *b.first));
    ++stats_.compressed_buckets;
  }
  return Status::OK();
}

Status DeviceExecutor::reduce_bucket(const DeviceBucket& b, const std::vector<Response>& responses,
                                     const Bucket& bucket, Clock::time_point start) {
  const std::string& first = *b.first;
  const size_t total = b.layout.total_bytes;
  Clock::time_point collective_start;
  if (b.path == DevicePath::kNative) {
    // NCCL reduces neither 16-bit integers nor bool: hora's ring runs over the NCCL
    // communicator's point-to-point with the CUDA reduction kernels (its buffer_ops) instead,
    // on the communicator's stream, after the host saw the pack; NCCL's own allreduce is
    // enqueued on the engine's stream behind the pack, without any wait.
    const DataType dtype = b.plan.dtype;
    const bool nccl_reduces =
        dtype != DataType::kInt16 && dtype != DataType::kUint16 && dtype != DataType::kBool;
    collectives::Communicator& comm = *resources_.device_comm;
    const bool on_stream = nccl_reduces && comm.has_stream_allreduce() && !options_.host_waits;
    if (!on_stream)
      HORA_RETURN_IF_ERROR(host_wait(b.device, *b.d, "allreduce of '" + first + "' (pack)"));
    record_bucket(timeline_, responses, bucket, "MEMCPY_IN_FUSION_BUFFER", start);
    collective_start = Clock::now();
    const Deadline deadline = Deadline::after_seconds(options_.timeout_s);
    HORA_RETURN_IF_ERROR(with_tensor(
        on_stream ? comm.allreduce_on_stream(b.fusion, b.fusion, b.count(), dtype, b.plan.op,
                                             b.d->stream, deadline)
        : nccl_reduces
            ? comm.allreduce(b.fusion, b.fusion, b.count(), dtype, b.plan.op, deadline)
            : collectives::run_allreduce(collectives::Algorithm::kRing, comm, b.fusion, b.fusion,
                                         b.count(), dtype, b.plan.op, algorithm_options()),
        "allreduce", first));
    if (on_stream) ++stats_.stream_collectives;
    ++stats_.native_buckets;
  } else {
    DeviceRuntime* rt = resources_.runtime;
    HORA_RETURN_IF_ERROR(ensure_pinned(total));
    HORA_RETURN_IF_ERROR(rt->memcpy_async(b.device, pinned_, b.fusion, total, b.d->stream));
    HORA_RETURN_IF_ERROR(host_wait(b.device, *b.d, "allreduce of '" + first + "' (copy to host)"));
    record_bucket(timeline_, responses, bucket, "MEMCPY_IN_FUSION_BUFFER", start);
    collective_start = Clock::now();
    const collectives::Selection sel = collectives::select_allreduce(
        total, host_comm_.size(), host_comm_.cost_model(), options_.algorithm, options_.topology);
    HORA_RETURN_IF_ERROR(with_tensor(
        b.plan.op == ReduceOp::kAdasum
            ? collectives::adasum_allreduce(host_comm_, pinned_, pinned_, b.counts, b.plan.dtype,
                                            algorithm_options())
            : collectives::run_allreduce(sel.algorithm, host_comm_, pinned_, pinned_, b.count(),
                                         b.plan.dtype, b.plan.op, algorithm_options()),
        "allreduce (staged through host memory)", first));
    HORA_RETURN_IF_ERROR(rt->memcpy_async(b.device, b.fusion, pinned_, total, b.d->stream));
    ++stats_.staged_buckets;
  }
  if (timeline_ != nullptr && timeline_->enabled())
    record_bucket(
        timeline_, responses, bucket, "ALLREDUCE", collective_start,
        allreduce_args("device_path", device_path_name(b.path),
                       b.path == DevicePath::kNative ? resources_.device_comm->backend_name()
                                                     : host_comm_.backend_name(),
                       total, bucket.members.size()));
  return Status::OK();
}

Status DeviceExecutor::unpack(const DeviceBucket& b, const std::vector<Response>& responses,
                              const Bucket& bucket) {
  DeviceRuntime* rt = resources_.runtime;
  const auto start = Clock::now();
  if (b.plan.compressed)
    HORA_RETURN_IF_ERROR(with_tensor(rt->cast_async(b.device, b.staging, DataType::kFloat32,
                                                    b.fusion, b.plan.dtype, b.count(), b.d->stream),
                                     "allreduce (decompress)", *b.first));
  std::vector<DeviceCopyItem> out_items;
  for (size_t m = 0; m < b.entries.size(); ++m) {
    if (b.entries[m] != nullptr)
      out_items.push_back({b.entries[m]->out.data(), b.slot(m), b.counts[m]});
  }
  HORA_RETURN_IF_ERROR(
      with_tensor(rt->batched_scale_copy_async(b.device, out_items, b.staging_dtype,
                                               b.plan.postscale, b.d->stream),
                  "allreduce (unpack)", *b.first));
  record_bucket(timeline_, responses, bucket, "MEMCPY_OUT_FUSION_BUFFER", start);
  return Status::OK();
}

Status DeviceExecutor::run_broadcast(const Response& r, const CompleteFn& complete) {
  Entry* e = queue_.find(r.name);
  if (e == nullptr)
    return Status::internal("tensor '" + r.name + "': agreed by every rank but not in flight");
  const DeviceSupport& support = resources_.support;
  const int device = support.device;
  DeviceRuntime* rt = resources_.runtime;
  const size_t count = static_cast<size_t>(r.element_count());
  const size_t bytes = count * data_type_bytes(r.dtype);
  HORA_ASSIGN_OR_RETURN(PerDevice * d, device_state(device, 0));
  HORA_RETURN_IF_ERROR(wait_ready(device, *d, *e));
  if (support.mode == DeviceMode::kNative) {
    HORA_RETURN_IF_ERROR(host_wait(device, *d, "broadcast of '" + r.name + "' (ready)"));
    HORA_RETURN_IF_ERROR(
        with_tensor(resources_.device_comm->broadcast(e->out.data(), count, r.dtype, r.root,
                                                      Deadline::after_seconds(options_.timeout_s)),
                    "broadcast", r.name));
    ++stats_.native_buckets;
  } else {
    HORA_RETURN_IF_ERROR(ensure_pinned(bytes));
    HORA_RETURN_IF_ERROR(rt->memcpy_async(device, pinned_, e->out.data(), bytes, d->stream));
    HORA_RETURN_IF_ERROR(host_wait(device, *d, "broadcast of '" + r.name + "' (copy to host)"));
    HORA_RETURN_IF_ERROR(
        with_tensor(collectives::pipelined_broadcast(host_comm_, pinned_, pinned_, count, r.dtype,
                                                     r.root, algorithm_options()),
                    "broadcast (staged through host memory)", r.name));
    HORA_RETURN_IF_ERROR(rt->memcpy_async(device, e->out.data(), pinned_, bytes, d->stream));
    ++stats_.staged_buckets;
  }
  (void)complete;  // the finalizer completes the handle, in order with the buckets before it
  return finish(device, *d, {e}, "broadcast of '" + r.name + "'");
}

}  // namespace engine
}  // namespace hora
