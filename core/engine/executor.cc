#include "core/engine/executor.h"

#include <cstring>

#include "collectives/algorithms/algorithms.h"
#include "core/engine/allocated_check.h"
#include "core/engine/allreduce_plan.h"
#include "core/engine/compressed_copy.h"
#include "core/engine/device_executor.h"
#include "core/engine/fused_in_place.h"
#include "core/engine/single_plan.h"
#include "hora/logging.h"
#include "kernels/kernels.h"

namespace hora {
namespace engine {
namespace {

using Clock = std::chrono::steady_clock;

// Where the result of `e` (of `shape`, `bytes` long) goes: the view its allocator returns, or
// the handle's engine-owned output when it has none. An allocator that fails (or returns an
// unusable view) leaves its error in *allocator_error and the result goes to engine-owned
// memory: the collective still runs, so the other ranks are not held up.
void* output_of(Entry& e, const std::vector<int64_t>& shape, size_t bytes,
                Status* allocator_error) {
  detail::HandleState& h = *e.handle;
  h.output_shape = shape;
  if (e.allocate) {
    StatusOr<TensorView> view = e.allocate(e.in.dtype(), shape);
    *allocator_error =
        check_allocated(e.request.name, view, e.in.dtype(), shape, bytes, Device::cpu());
    if (allocator_error->ok()) return view.value().data();
  }
  h.output.resize(bytes);
  return h.output.data();
}

AlgorithmTunerOptions tuner_options(const ExecutorOptions& options) {
  AlgorithmTunerOptions o;
  o.enabled = options.autotune;
  o.samples = options.autotune_samples;
  o.timeout_s = options.timeout_s;
  o.requested = options.algorithm;
  o.topology = options.topology;
  return o;
}

// fn(response, entry, count, offset) for each member of `bucket` in member order: its entry
// (null: none on this rank), its element count and its byte offset in the fusion buffer
// (members back to back, `elem` bytes an element). A template, so the loop inlines.
template <typename Fn>
void for_each_member(const std::vector<Response>& responses, const Bucket& bucket,
                     const std::vector<Entry*>& entries, size_t elem, Fn&& fn) {
  size_t offset = 0;
  for (int i : bucket.members) {
    const size_t count = static_cast<size_t>(responses[i].element_count());
    fn(responses[i], entries[i], count, offset);
    offset += count * elem;
  }
}

double micros_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

}  // namespace

Executor::Executor(collectives::Communicator& comm, const ExecutorOptions& options,
                   TensorQueue& queue, Timeline& timeline)
    : comm_(comm),
      options_(options),
      fusion_threshold_bytes_(options.fusion_threshold_bytes),
      queue_(queue),
      timeline_(timeline),
      tuner_(comm, tuner_options(options)) {}

collectives::AlgorithmOptions Executor::algorithm_options() {
  return executor_algorithm_options(options_.timeout_s, &scratch_, options_.topology);
}

void Executor::complete(const std::string& name, const Status& status) {
  Entry* e = queue_.find(name);
  if (e == nullptr) return;  // a joined rank's zero contribution: nothing to complete
  std::shared_ptr<detail::HandleState> handle = e->handle;
  queue_.remove(name);
  handle->complete(status);
}

void Executor::complete_bucket(const Bucket& bucket, const Status& status) {
  done_entries_.clear();
  done_handles_.clear();
  for (int i : bucket.members) {
    Entry* e = entries_[i];
    if (e == nullptr) continue;
    entries_[i] = nullptr;
    done_handles_.push_back(std::move(e->handle));
    done_entries_.push_back(e);
  }
  // Removed before completed: a caller whose wait returns may enqueue the name again at once.
  queue_.remove_all(done_entries_);
  for (const std::shared_ptr<detail::HandleState>& h : done_handles_) h->complete(status);
  done_handles_.clear();
}

Status Executor::run_algorithm(const void* in, void* out, size_t count, DataType dtype, ReduceOp op,
                               const std::vector<Response>& responses, const Bucket& bucket,
                               const TunerPick* taken) {
  const std::string& first_name = responses[bucket.members.front()].name;
  const size_t bytes = count * data_type_bytes(dtype);
  if (comm_.size() == 1) {
    // Alone, any reduction of the one contribution is that contribution (an average's 1/size
    // is 1): no algorithm to select (the selector's estimates cost more than a small tensor's
    // whole allreduce) or run.
    const auto start = Clock::now();
    kernels::copy(out, in, bytes);
    if (timeline_.enabled())
      record_bucket(
          &timeline_, responses, bucket, "ALLREDUCE", start,
          allreduce_args("algorithm", "local", comm_.backend_name(), bytes, bucket.members.size()));
    return Status::OK();
  }
  const TunerPick pick = taken != nullptr ? *taken : tuner_.take(bytes);
  const auto start = Clock::now();
  Status s = collectives::run_allreduce(pick.algorithm, comm_, in, out, count, dtype, op,
                                        algorithm_options());
  if (s.ok() && taken == nullptr) s = tuner_.record(pick, micros_since(start));
  if (timeline_.enabled())
    record_bucket(&timeline_, responses, bucket, "ALLREDUCE", start,
                  allreduce_args("algorithm", collectives::algorithm_name(pick.algorithm),
                                 comm_.backend_name(), bytes, bucket.members.size()));
  if (!s.ok()) return Status(s.code(), "allreduce of tensor '" + first_name + "': " + s.message());
  return Status::OK();
}

// The paths of an allreduce bucket, in the order executor.h's file comment gives them.
Status Executor::run_allreduce(const std::vector<Response>& responses, const Bucket& bucket) {
  const Response& head = responses[bucket.members.front()];
  AllreducePlan plan = plan_allreduce(head, comm_.size());
  ++stats_.buckets;
  if (bucket.members.size() > 1) stats_.fused_tensors += bucket.members.size();
  if (head.op == ReduceOp::kAdasum) {
    HORA_RETURN_IF_ERROR(run_adasum(responses, bucket, plan));
    complete_bucket(bucket, Status::OK());
    return Status::OK();
  }

  // Every rank must run the algorithm with the same op: `direct` depends on the response only
  // (a joined rank, which has no entry, reduces its zeros with that op too).
  const bool direct = bucket.members.size() == 1 && head.prescale == 1.0 && head.postscale == 1.0 &&
                      !plan.compressed;
  if (direct) {
    plan.op = head.op;
    plan.postscale = 1.0;
  }
  Entry* lone = bucket.members.size() == 1 ? entries_[bucket.members.front()] : nullptr;
  const size_t total = static_cast<size_t>(bucket.bytes);
  if (lone != nullptr && direct) {
    // No scale factors of the caller's: the algorithm reads the input, writes the output and
    // applies an average's 1/size in its last pass itself: no copy, no extra pass.
    HORA_RETURN_IF_ERROR(run_algorithm(lone->in.data(), lone->out.data(),
                                       static_cast<size_t>(head.element_count()), plan.dtype,
                                       head.op, responses, bucket));
  } else if (lone != nullptr && !plan.compressed) {
    HORA_RETURN_IF_ERROR(run_lone_scaled(*lone, responses, bucket, plan));
  } else if (!plan.compressed && options_.fusion_in_place && comm_.size() == 1) {
    // A fused bucket without compression, reduced where its tensors lie (fused_in_place.h): at
    // one rank, or through the communicator's gather-list allreduce where the selector takes
    // the native allreduce. Every rank must agree, so the condition depends on the bucket and
    // the communicator only: a bucket of one tensor never goes this way, because a rank that
    // has joined reaches here with it (no entry) while the others ran it as a lone tensor above.
    const auto start = Clock::now();
    bucket_spans(responses, bucket, entries_, &spans_);
    local_allreduce_spans(spans_, plan.dtype, head.prescale, plan.postscale);
    record_bucket(&timeline_, responses, bucket, "ALLREDUCE", start, {{"algorithm", "local"}});
  } else if (!plan.compressed && bucket.members.size() > 1 && options_.fusion_in_place &&
             comm_.has_allreduce_spans() && tuner_.peek(total) == collectives::Algorithm::kNative) {
    // The tuner's peek is what its take() returns next for these bytes, on every rank alike.
    HORA_RETURN_IF_ERROR(run_native_spans(responses, bucket, plan));
  } else {
    HORA_RETURN_IF_ERROR(run_packed(responses, bucket, plan));
  }
  complete_bucket(bucket, Status::OK());
  return Status::OK();
}

Status Executor::run_lone_scaled(Entry& lone, const std::vector<Response>& responses,
                                 const Bucket& bucket, const AllreducePlan& plan) {
  const Response& head = responses[bucket.members.front()];
  void* out = lone.out.data();
  const size_t count = static_cast<size_t>(head.element_count());
  const auto start = Clock::now();
  if (lone.in.data() != out) {
    kernels::scale_copy(out, lone.in.data(), count, plan.dtype, head.prescale);
    record_bucket(&timeline_, responses, bucket, "PREPARE_OUTPUT", start);
  } else if (head.prescale != 1.0) {
    kernels::scale(out, count, plan.dtype, head.prescale);
    record_bucket(&timeline_, responses, bucket, "PREPARE_OUTPUT", start);
  }
  HORA_RETURN_IF_ERROR(run_algorithm(out, out, count, plan.dtype, plan.op, responses, bucket));
  if (plan.postscale != 1.0) {
    const auto post = Clock::now();
    kernels::scale(out, count, plan.dtype, plan.postscale);
    record_bucket(&timeline_, responses, bucket, "POSTSCALE", post);
  }
  return Status::OK();
}

Status Executor::run_native_spans(const std::vector<Response>& responses, const Bucket& bucket,
                                  const AllreducePlan& plan) {
  const Response& head = responses[bucket.members.front()];
  const size_t total = static_cast<size_t>(bucket.bytes);
  const TunerPick pick = tuner_.take(total);
  const auto start = Clock::now();
  bucket_spans(responses, bucket, entries_, &spans_);
  Status s = comm_.allreduce_spans(spans_, plan.dtype, plan.op, head.prescale, plan.postscale,
                                   Deadline::after_seconds(options_.timeout_s));
  if (s.ok()) s = tuner_.record(pick, micros_since(start));
  if (timeline_.enabled())
    record_bucket(&timeline_, responses, bucket, "ALLREDUCE", start,
                  allreduce_args("algorithm", "native-in-place", comm_.backend_name(), total,
                                 bucket.members.size()));
  if (!s.ok()) return Status(s.code(), "allreduce of tensor '" + head.name + "': " + s.message());
  return Status::OK();
}

uint8_t* Executor::fusion_buffer(size_t total) {
  uint8_t* fusion = static_cast<uint8_t*>(comm_.shared_buffer(total));
  if (fusion != nullptr) return fusion;
  if (fusion_.size() < total) fusion_.resize(total);
  return fusion_.data();
}

Status Executor::run_packed(const std::vector<Response>& responses, const Bucket& bucket,
                            const AllreducePlan& plan) {
  const size_t total = static_cast<size_t>(bucket.bytes);
  uint8_t* fusion = fusion_buffer(total);
  // Tuned over the whole packed path (packing, algorithm, unpacking): the fused in-place
  // native path it competes with has no packing. (One rank selects nothing: run_algorithm's
  // local copy.)
  const TunerPick pick = comm_.size() > 1 ? tuner_.take(total) : TunerPick{};
  const auto start = Clock::now();
  pack(fusion, responses, bucket, plan);
  record_bucket(&timeline_, responses, bucket, "MEMCPY_IN_FUSION_BUFFER", start);
  HORA_RETURN_IF_ERROR(run_algorithm(fusion, fusion, total / plan.elem, plan.dtype, plan.op,
                                     responses, bucket, &pick));
  const auto unpack_start = Clock::now();
  unpack(fusion, responses, bucket, plan);
  record_bucket(&timeline_, responses, bucket, "MEMCPY_OUT_FUSION_BUFFER", unpack_start);
  return tuner_.record(pick, micros_since(start));
}

void Executor::pack(uint8_t* fusion, const std::vector<Response>& responses, const Bucket& bucket,
                    const AllreducePlan& plan) {
  for_each_member(responses, bucket, entries_, plan.elem,
                  [&](const Response& r, Entry* e, size_t count, size_t offset) {
                    if (e != nullptr && plan.compressed) {
                      pack_compressed(fusion + offset, static_cast<const float*>(e->in.data()),
                                      count, plan.compression, r.prescale);
                    } else if (e != nullptr) {
                      kernels::scale_copy(fusion + offset, e->in.data(), count, plan.dtype,
                                          r.prescale);
                    } else {
                      std::memset(fusion + offset, 0, count * plan.elem);  // joined: zeros
                    }
                  });
}

void Executor::unpack(const uint8_t* fusion, const std::vector<Response>& responses,
                      const Bucket& bucket, const AllreducePlan& plan) {
  for_each_member(responses, bucket, entries_, plan.elem,
                  [&](const Response&, Entry* e, size_t count, size_t offset) {
                    if (e != nullptr && plan.compressed) {
                      unpack_compressed(static_cast<float*>(e->out.data()), fusion + offset, count,
                                        plan.compression, plan.postscale);
                    } else if (e != nullptr) {
                      kernels::scale_copy(e->out.data(), fusion + offset, count, plan.dtype,
                                          plan.postscale);
                    }
                  });
}

Status Executor::run_single(const Response& r) {
  if (r.is_error()) {
    ++stats_.errors;
    complete(r.name, Status(static_cast<StatusCode>(r.error_code), r.error));
    return Status::OK();
  }
  Entry* e = queue_.find(r.name);
  if (r.type == CollectiveType::kBarrier) {
    // Agreement itself proved that every rank arrived.
    complete(r.name, Status::OK());
    return Status::OK();
  }
  if (r.type == CollectiveType::kJoin) {
    if (e != nullptr) {
      MutexLock lock(&e->handle->mu);
      e->handle->join_result = r.last_joined;
    }
    complete(r.name, Status::OK());
    return Status::OK();
  }
  if (e == nullptr)
    return Status::internal("tensor '" + r.name +
                            "': agreed by every rank but not in flight "
                            "on rank " +
                            std::to_string(comm_.rank()));
  if (r.type != CollectiveType::kBroadcast && r.type != CollectiveType::kAllgather &&
      r.type != CollectiveType::kAlltoall && r.type != CollectiveType::kReducescatter)
    return Status::internal("tensor '" + r.name + "': unexpected collective " +
                            collective_name(r.type));
  Status allocator_error;
  const auto start = Clock::now();
  Status s = r.type == CollectiveType::kBroadcast
                 ? collectives::pipelined_broadcast(comm_, e->out.data(), e->out.data(),
                                                    static_cast<size_t>(r.element_count()), r.dtype,
                                                    r.root, algorithm_options())
                 : run_planned(*e, r, &allocator_error);
  if (timeline_.enabled())
    timeline_.event(r.name, timeline_phase(r.type).c_str(), start, Clock::now(),
                    {{"backend", comm_.backend_name()}});
  if (!s.ok())
    return Status(s.code(), std::string(collective_name(r.type)) + " of tensor '" + r.name +
                                "': " + s.message());
  complete(r.name, allocator_error);
  return Status::OK();
}

Status Executor::run_planned(Entry& e, const Response& r, Status* allocator_error) {
  const SinglePlan p = plan_single(r, e, comm_.rank(), comm_.size(), &e.handle->received_splits);
  void* out = output_of(e, p.shape, p.out_count * data_type_bytes(r.dtype), allocator_error);
  // A reducescatter's scale factors (the others have none): the prescaled input in the
  // fusion buffer, which no bucket uses while a single collective runs; the postscale on
  // this rank's block afterwards.
  const void* in = e.in.data();
  if (r.type == CollectiveType::kReducescatter && r.prescale != 1.0) {
    uint8_t* scaled = fusion_buffer(p.in_count * data_type_bytes(r.dtype));
    kernels::scale_copy(scaled, in, p.in_count, r.dtype, r.prescale);
    in = scaled;
  }
  Status s = run_host_plan(comm_, r, p, in, out, algorithm_options(), options_.allgather_topology);
  if (s.ok() && out != nullptr && r.type == CollectiveType::kReducescatter && r.postscale != 1.0)
    kernels::scale(out, p.out_count, r.dtype, r.postscale);
  return s;
}

Status Executor::execute(const ResponseList& list) {
  // Nothing agreed: the planner keeps the last list's plan for a list that repeats it.
  if (list.responses.empty()) return Status::OK();
  const auto agreed = Clock::now();
  queue_.find_all(list.responses, &entries_);
  if (timeline_.enabled()) {
    for (size_t i = 0; i < list.responses.size(); ++i) {
      const Response& r = list.responses[i];
      const Entry* e = entries_[i];
      if (e == nullptr) continue;
      Timeline::Args args = {{"dtype", data_type_name(r.dtype)},
                             {"shape", shape_to_string(r.shape)}};
      if (r.type == CollectiveType::kAllreduce || r.type == CollectiveType::kReducescatter)
        args.emplace_back("op", reduce_op_name(r.op));
      timeline_.event(r.name, "NEGOTIATE", e->enqueued, agreed, std::move(args));
    }
  }
  for (const Bucket& b :
       planner_.plan(list.responses, fusion_threshold_bytes_, list.cached_id, list.repeated)) {
    record_bucket(&timeline_, list.responses, b, "QUEUE", agreed);
    const Response& head = list.responses[b.members.front()];
    if (head.device.is_cuda() && !head.is_error() && options_.device != nullptr &&
        head.type != CollectiveType::kBarrier && head.type != CollectiveType::kJoin) {
      auto done = [this](const std::string& name, const Status& s) { complete(name, s); };
      HORA_RETURN_IF_ERROR(head.type == CollectiveType::kAllreduce
                               ? options_.device->run_allreduce(list.responses, b, done)
                           : head.type == CollectiveType::kBroadcast
                               ? options_.device->run_broadcast(head, done)
                               : options_.device->run_single(head, done));
    } else if (head.type == CollectiveType::kAllreduce && !head.is_error()) {
      HORA_RETURN_IF_ERROR(run_allreduce(list.responses, b));
    } else {
      HORA_RETURN_IF_ERROR(run_single(head));
    }
  }
  return Status::OK();
}

}  // namespace engine
}  // namespace hora
