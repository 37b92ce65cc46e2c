// DeviceExecutor: the engine's path for tensors in GPU memory (allreduce, broadcast,
// allgather, alltoall, reducescatter), beside the Executor, which hands it every bucket whose
// tensors are on a device. It reaches the GPU
// only through DeviceRuntime (core/base/device_runtime.h), so it builds without CUDA.
//
// Per bucket (plan_device_allreduce in device_route.h gives the steps), all queued on the
// engine's own stream on the rank's GPU, with no host wait on the engine's thread:
//   1. the stream waits for each input's ready event, recorded on the framework's stream at
//      enqueue (admit): the GPU orders the framework's kernels before the pack, and neither the
//      host nor the rest of the device waits (one wait per framework stream: ready_events.h);
//   2. one batched pack (kernels/cuda batched_scale_copy) of the inputs into this device's
//      fusion buffer, with the prescale; a compressed bucket (float16/bfloat16) is packed in
//      float32 behind the wire region and cast into it on the device (kernels/cuda casts);
//   3. the collective: kNative on the NCCL communicator, enqueued on the engine's stream
//      (Communicator::allreduce_on_stream; hora's ring over NCCL for the dtypes NCCL cannot
//      reduce waits for the pack on the host first), or kStaged over the host communicator on
//      a pinned host copy of the fusion buffer (the host waits for that copy: it reduces it);
//   4. one batched unpack into the outputs with the postscale (a compressed bucket is cast
//      back to float32 first); then a completion event from a pool is recorded on the stream
//      and published on every handle (HandleState::stream_waiter, Handle::wait_on_stream: a
//      framework stream waits for it on the GPU without the host blocking), and the event and
//      the handles go to the DeviceFinalizer (device_finalizer.h), whose thread completes the
//      handles once the event completed, so a completed handle's outputs are ready for any
//      stream. The engine's thread meanwhile negotiates and enqueues the next buckets; they
//      reuse the fusion buffer safely because everything runs in order on the one stream.
// At one rank an uncompressed bucket has nothing to reduce: one batched copy from the inputs
// to the outputs with the prescale (skipped for an in-place tensor when it is 1) and, when it
// is not 1, the postscale in place; no fusion buffer, no collective.
// kAverage runs as kSum with postscale x 1/size. A rank that joined and lacks a tensor
// contributes zeros. The fusion buffers (one per device) and the pinned buffer are reused and
// only grow (after draining the finalizer: nothing in flight still uses the old ones).
// Errors: a failure while enqueueing is returned (the engine then fails everything); a
// failure of the device work fails the handles of its bucket (the finalizer); a failure of
// the NCCL communicator under in-flight work fails every pending bucket and is returned by
// the next run_* call; drain() (the engine, before it fails what is left at shutdown or after
// an error) waits for the work in flight with the deadline.
//
// Allgather, alltoall and reducescatter (run_single, device_collectives.cc) take the host
// path's counts, output shape and received splits (executor.cc); the result goes where the
// output allocator puts it, which must be device memory on the input's GPU (hora.torch
// allocates there), or, without an allocator or when it fails, to the handle's host output
// (handle.output()) as on the host path, the allocator's error completing the handle. Native:
// NCCL's allgatherv / alltoallv / reducescatter (hora's ring over NCCL for the dtypes NCCL
// cannot reduce); staged: the input copied into pinned memory, the host path's algorithm, the
// result copied to the device.
//
// Broadcast, allgather, alltoall and reducescatter complete through the finalizer too (in
// submission order with the allreduce buckets), after their work was queued.
//
// Threads: admit() on the enqueuing thread (it only records an event on the caller's stream);
// the finalizer's thread completes handles; everything else on the engine's background thread.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/scratch_pool.h"
#include "collectives/selector.h"
#include "collectives/topology.h"
#include "core/base/device_runtime.h"
#include "core/engine/allreduce_plan.h"
#include "core/engine/device_finalizer.h"
#include "core/engine/device_route.h"
#include "core/engine/fusion_planner.h"
#include "core/engine/message.h"
#include "core/engine/ready_events.h"
#include "core/engine/tensor_queue.h"
#include "core/engine/timeline.h"
#include "hora/mutex.h"
#include "hora/status.h"
#include "hora/thread_annotations.h"

namespace hora {
namespace engine {

// What the job has for device tensors; owned by the caller (core/context.cc), borrowed here.
struct DeviceResources {
  DeviceRuntime* runtime = nullptr;                  // null unless support.mode != kNone
  collectives::Communicator* device_comm = nullptr;  // the NCCL communicator (kNative)
  DeviceSupport support;
};

struct DeviceExecutorOptions {
  double timeout_s = 300;
  collectives::Algorithm algorithm = collectives::Algorithm::kAuto;  // staged host allreduce
  const collectives::Topology* topology = nullptr;
  // The device path without the finalizer, for A/B benchmarks (EngineOptions::
  // device_host_waits): the host waits for the pack before a blocking NCCL allreduce, one rank
  // runs the collective too, and the engine's thread waits for each bucket's completion event
  // and completes its handles itself before it goes on.
  bool host_waits = false;
};

// Counters for tests and stats; background thread writes, any thread reads after a wait.
struct DeviceExecutorStats {
  std::atomic<int64_t> native_buckets{0};
  std::atomic<int64_t> staged_buckets{0};
  std::atomic<int64_t> ready_waits{0};  // inputs whose ready event the engine's stream waited on
  std::atomic<int64_t> done_events{0};  // completion events recorded and published on handles
  std::atomic<int64_t> compressed_buckets{0};  // cast to float16/bfloat16 on the device
  std::atomic<int64_t> local_buckets{0};       // one rank: copied from inputs to outputs
  std::atomic<int64_t> stream_collectives{0};  // enqueued on the engine's stream
  std::atomic<int64_t> host_waits{0};          // the engine's thread waited for its stream
};

class DeviceExecutor {
 public:
  using CompleteFn = std::function<void(const std::string& name, Status status)>;

  // `timeline` (may be null) gets each bucket's phases, as the Executor's: the pack
  // (MEMCPY_IN_FUSION_BUFFER, until the host saw it), ALLREDUCE and the unpack.
  DeviceExecutor(const DeviceResources& resources, collectives::Communicator& host_comm,
                 const DeviceExecutorOptions& options, TensorQueue& queue,
                 Timeline* timeline = nullptr);
  ~DeviceExecutor();
  DeviceExecutor(const DeviceExecutor&) = delete;
  DeviceExecutor& operator=(const DeviceExecutor&) = delete;

  const DeviceSupport& support() const { return resources_.support; }

  // Enqueuing thread, before the entries enter the queue: routes each device entry
  // (route_tensor: no GPU path, or another GPU than this rank's, fails naming the tensor),
  // refuses collectives and options the device path lacks, and records each device input's
  // ready event on its TensorView's stream. Host entries pass untouched.
  Status admit(std::vector<Entry>& entries);

  // Background thread. Runs an allreduce bucket / a broadcast whose tensors are on a device
  // and completes their handles through `complete`. A communication or CUDA failure is returned
  // (the engine then fails everything, as for host tensors).
  Status run_allreduce(const std::vector<Response>& responses, const Bucket& bucket,
                       const CompleteFn& complete);
  Status run_broadcast(const Response& r, const CompleteFn& complete);
  // Background thread. Runs an allgather, alltoall or reducescatter of a device tensor (see the
  // file comment) and completes its handle; errors as run_allreduce.
  Status run_single(const Response& r, const CompleteFn& complete);

  // Any thread: waits until the work handed to the finalizer finished (see the file comment),
  // at most the timeout; returns a fatal failure of the device side, if any.
  Status drain();
  // Jobs the finalizer holds now and at most so far.
  int64_t in_flight() const { return finalizer_.in_flight(); }
  int64_t max_in_flight() const { return finalizer_.max_in_flight(); }

  const DeviceExecutorStats& stats() const { return stats_; }

 private:
  struct PerDevice {
    DeviceStream stream = nullptr;
    DeviceEvent event = nullptr;  // reused: recorded, then waited on by the host
    void* fusion = nullptr;
    size_t fusion_bytes = 0;
  };
  // Lets a handle's stream_waiter (which may outlive the executor) use `done` events only
  // while the executor lives; afterwards every bucket has been waited for on the host.
  struct Gate {
    Mutex mu;
    bool alive HORA_GUARDED_BY(mu) = true;
  };
  StatusOr<PerDevice*> device_state(int device, size_t fusion_bytes);
  Status ensure_pinned(size_t bytes);
  Status host_wait(int device, PerDevice& d, const std::string& what);
  // Waits (on the engine's stream) for the ready event admit() recorded for `e`.
  Status wait_ready(int device, PerDevice& d, Entry& e);
  // Records a pooled completion event after the work enqueued so far on d's stream, publishes
  // it on the handles of `entries` (null entries skipped) for Handle::wait_on_stream, and hands
  // it to the finalizer, which completes those handles with `status` once it completed. A
  // framework stream that waits on the event after the pool reused it for a later bucket waits
  // later than needed, never too early (one stream).
  Status finish(int device, PerDevice& d, const std::vector<Entry*>& entries, std::string what,
                Status status = Status::OK());
  // Before the fusion or pinned buffer is replaced: nothing in flight may still use it.
  Status drain_for(const char* why);
  collectives::AlgorithmOptions algorithm_options();
  // One allreduce bucket on the device, as open_bucket() laid it out; run_allreduce's steps
  // share it.
  struct DeviceBucket {
    const std::string* first = nullptr;  // the head's name, for messages
    AllreducePlan plan;
    DevicePath path = DevicePath::kNative;
    int device = -1;
    PerDevice* d = nullptr;
    std::vector<size_t> counts;   // elements per member
    std::vector<Entry*> entries;  // per member; null: this rank joined (zeros)
    DeviceBucketPlan layout;      // the members' offsets in the wire region
    uint8_t* fusion = nullptr;    // the wire region (what the collective reduces)
    // Where the members are packed and unpacked: the wire region itself, or (compressed) the
    // float32 region behind it.
    uint8_t* staging = nullptr;
    size_t staging_elem = 0;
    DataType staging_dtype = DataType::kFloat32;
    size_t count() const { return layout.total_bytes / plan.elem; }  // elements reduced
    bool local = false;  // one rank, uncompressed: inputs copied to outputs
    uint8_t* slot(size_t m) const { return staging + layout.offsets[m] / plan.elem * staging_elem; }
  };
  // Refuses a rank without a GPU path, plans the bucket and sizes this device's fusion buffer.
  Status open_bucket(const std::vector<Response>& responses, const Bucket& bucket, DeviceBucket* b);
  // Step 1: the engine's stream waits for the inputs' ready events.
  Status wait_inputs(const DeviceBucket& b);
  // One rank: the inputs scaled into the outputs (the file comment).
  Status copy_local(const DeviceBucket& b, const std::vector<Response>& responses,
                    const Bucket& bucket);
  // Steps 1-2: the engine's stream waits for the inputs' ready events; the batched pack
  // (zeros for a joined rank's members), prescaled, then the cast to the half type.
  Status pack(const DeviceBucket& b, const std::vector<Response>& responses, const Bucket& bucket);
  // Step 3: the collective, native or staged; records the pack (from `start`) and ALLREDUCE.
  Status reduce_bucket(const DeviceBucket& b, const std::vector<Response>& responses,
                       const Bucket& bucket, Clock::time_point start);
  // Step 4: the cast back and the batched unpack with the postscale.
  Status unpack(const DeviceBucket& b, const std::vector<Response>& responses,
                const Bucket& bucket);

  const DeviceResources resources_;
  collectives::Communicator& host_comm_;
  const DeviceExecutorOptions options_;
  TensorQueue& queue_;
  Timeline* const timeline_;
  collectives::ScratchPool scratch_;
  std::map<int, PerDevice> devices_;
  void* pinned_ = nullptr;
  size_t pinned_bytes_ = 0;
  const std::shared_ptr<Gate> gate_ = std::make_shared<Gate>();
  DeviceExecutorStats stats_;
  DeviceFinalizer finalizer_;
  // The ready events' pool (the events travel in the entries) and the engine's completion
  // events.
  ReadyEvents ready_;
};

}  // namespace engine
}  // namespace hora
