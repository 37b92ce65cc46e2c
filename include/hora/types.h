// The public vocabulary of hora's API beyond the base types: the settings given to init, a
// collective's Handle and its options, the results of the blocking collectives and the engine's
// counters. hora/hora.h includes it; the engine (core/engine/) uses these types without seeing
// the API's functions.
//
// Plain values, except Handle (copies share one completion state; see its comment for which
// threads may call what).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hora/compression.h"
#include "hora/data_type.h"
#include "hora/reduce_op.h"
#include "hora/status.h"
#include "hora/tensor_view.h"

namespace hora {

namespace detail {
struct HandleState;
struct HandleAccess;
}  // namespace detail

// Settings given in code. Each pair is a HORA_* variable name and its value, validated exactly
// like the environment variable, and taking precedence over it ({"HORA_FUSION_THRESHOLD",
// "0"}). An unknown name is an init error.
struct InitOptions {
  std::vector<std::pair<std::string, std::string>> settings;
  // Process sets to register at init (hora/process_set.h), in this order: the first gets id
  // 1, the next 2, ... Every rank passes the same sets; a set listed twice, an empty set or a
  // rank outside the job is an init error.
  std::vector<std::vector<int>> process_sets;
  // Allows add_process_set / remove_process_set after init (also HORA_DYNAMIC_PROCESS_SETS=1).
  bool dynamic_process_sets = false;
};

// The completion of one enqueued collective. Copyable (copies share the state); a
// default-constructed Handle is invalid and its wait() fails.
class Handle {
 public:
  Handle() = default;

  bool valid() const { return state_ != nullptr; }
  // The tensor's name (the generated one for unnamed calls).
  const std::string& name() const;

  // Blocks until the collective completed and returns its Status. Completion is bounded by
  // the other ranks' liveness, not by a timer: a peer that dies, exits or stops answering
  // (SIGSTOP) fails the handle within HORA_TIMEOUT_S + 2 s naming that rank; a mismatch or a
  // shutdown fails it at once; a peer that is alive but has not submitted the tensor yet
  // (slow to start, loading data) is waited for (rank 0 warns after HORA_STALL_WARNING_S, and
  // HORA_STALL_SHUTDOWN_S, when set, ends the wait with an error).
  Status wait();
  // The same, giving up after `timeout` with kTimeout naming the tensor (the collective stays
  // pending: wait again or shut down).
  Status wait(std::chrono::milliseconds timeout);
  // True once complete (wait() then returns at once).
  bool poll() const;
  // For a collective of GPU tensors: makes `stream` (a cudaStream_t; nullptr: the default
  // stream) wait on the GPU for the result, without the host waiting for the GPU. Returns once
  // the engine has enqueued the result's last kernel (then `stream`'s later work sees the
  // outputs) or the handle completed, with the collective's error if it failed by then (an
  // error found later still completes the handle: check it with wait()). For host tensors it
  // is wait(). No deadline of its own, as wait().
  Status wait_on_stream(void* stream);
  // The same, giving up after `timeout` with kTimeout naming the tensor (it stays pending).
  Status wait_on_stream(void* stream, std::chrono::milliseconds timeout);

  // Runs `callback` exactly once with the final Status: at once on the calling thread when
  // the handle is already complete, else right after completion (before wait() returns to
  // other threads) on the thread that ran the engine's round: the engine thread, or a thread
  // that was waiting on one of this job's handles and ran the round itself (HORA_WAITERS_HELP).
  // The callback must be short and must not call into hora at all (it runs on the thread that
  // completes handles, and during shutdown under the runtime's lock: a call to rank(), an
  // enqueue or a wait from it would deadlock). One callback per handle:
  // a second call replaces a callback that has not run yet. An invalid handle's callback runs at
  // once with kFailedPrecondition.
  void on_complete(std::function<void(const Status&)> callback) const;

  // Results the engine allocates (allgather, alltoall, reducescatter), valid once wait()
  // returned OK: the bytes and the shape of the output tensor.
  const std::vector<uint8_t>& output() const;
  const std::vector<int64_t>& output_shape() const;
  // alltoall: how many first-dimension rows came from each rank.
  const std::vector<int64_t>& received_splits() const;
  // join: the last rank to join (the same on every rank); -1 until known (it is set before
  // completion, so on_complete callbacks see it).
  int last_joined() const;

 private:
  // Internal: core/ builds a Handle from its state through detail::HandleAccess.
  friend struct detail::HandleAccess;
  explicit Handle(std::shared_ptr<detail::HandleState> state) : state_(std::move(state)) {}

  std::shared_ptr<detail::HandleState> state_;
};

namespace detail {
// Internal, not part of the API: how hora's own layers (core/api.cc, the engine, hora's tests)
// make a Handle of a completion state. Users get handles from the collectives only.
struct HandleAccess {
  static Handle make(std::shared_ptr<HandleState> state) { return Handle(std::move(state)); }
};
}  // namespace detail

// How an allreduce combines and scales. op must be one of ReduceOp; compression applies to
// float32 tensors only (kInvalidArgument otherwise) and must be the same on every rank.
struct AllreduceOptions {
  ReduceOp op = ReduceOp::kAverage;
  double prescale = 1.0;
  double postscale = 1.0;
  Compression compression = Compression::kNone;
  // The process set to reduce over (hora/process_set.h): 0, the global set, by default.
  int process_set = 0;
};

// Where allgather, alltoall and reducescatter put a result whose shape is known only after
// negotiation. Called once per collective on the thread that runs the engine's round (as
// Handle::on_complete's callbacks), with the input's dtype and
// the output's shape; returns a view of caller-owned memory of exactly that dtype and shape
// (contiguous, on the input's device) that stays valid until the handle completed. When it
// fails (or returns a view of another dtype or shape), this rank still runs the collective
// into engine-owned memory, so the other ranks are not held up, and its handle completes
// with the allocator's error. Without an allocator the result is in handle.output().
using OutputAllocator =
    std::function<StatusOr<TensorView>(DataType dtype, const std::vector<int64_t>& shape)>;

// What the blocking allgather, alltoall and reducescatter return: the output tensor (bytes of
// the input's dtype, and its shape) and, for alltoall, the rows that came from each rank.
struct CollectiveResult {
  std::vector<uint8_t> data;
  std::vector<int64_t> shape;
  std::vector<int64_t> received_splits;
};

// Counters of this process's engine (hora::engine_stats()). Internal, for hora's own tests and
// benchmarks: the fields may change between versions, with no stability promise.
struct EngineStats {
  int64_t rounds = 0;         // negotiation rounds run
  int64_t cache_hits = 0;     // tensors agreed through the response cache bit vector
  int64_t coordinated = 0;    // tensors agreed through the coordinator
  int64_t buckets = 0;        // allreduce buckets executed (a fused group counts once)
  int64_t fused_tensors = 0;  // allreduce tensors executed in buckets of two or more
  int64_t cache_evictions = 0;
  int64_t errors = 0;  // tensors completed with an error response
  // Rounds that agreed an earlier round's list of cache hits again (a training step like one
  // before): that list reused, not copied out of the cache, and its fusion plan too.
  int64_t repeated_steps = 0;
};

// What HORA_AUTOTUNE=1 tuned (hora::autotune_state()): the values in force now, whether the
// search is over, and every change applied, at the training step it took effect (the same
// steps and values on every rank of the job).
struct AutotuneState {
  bool enabled = false;    // HORA_AUTOTUNE=1 and some knob left free to tune
  bool converged = false;  // the search ended: the values below are final
  int64_t samples = 0;     // configurations tried so far
  int64_t steps = 0;       // training steps seen (recognised by allreduce names repeating)
  int64_t fusion_threshold_bytes = 0;
  double cycle_time_ms = 0;
  bool cache_enabled = true;
  bool hierarchical_allreduce = false;
  bool hierarchical_allgather = false;
  double score = 0;        // the best sample's bytes reduced per second (rank 0's figure)
  std::string algorithms;  // allreduce algorithm fixed per size class, "2^14:ring 2^20:rd"
  struct Change {
    int64_t step = 0;  // applied after this many steps
    int64_t fusion_threshold_bytes = 0;
    double cycle_time_ms = 0;
    bool cache_enabled = true;
  };
  std::vector<Change> history;
};

}  // namespace hora
