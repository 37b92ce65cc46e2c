// hora: the public C++ API. The only header users include.
//
//   hora::Status s = hora::init();     // reads HORA_* (or mpirun/Slurm/torchrun) variables
//   if (!s.ok()) { std::cerr << s.to_string() << "\n"; return 1; }
//   auto grad = hora::TensorView::flat(g.data(), hora::DataType::kFloat32, g.size()).value();
//   hora::Handle h = hora::allreduce_async("grad/fc1.weight", grad, grad,
//   hora::ReduceOp::kAverage);
//   ... more work, more enqueues ...
//   s = h.wait();                       // the average of every rank's `grad` is in `grad`
//   hora::shutdown();
//
// Collectives are named and asynchronous: any thread may enqueue at any time and in any order;
// the engine's background thread agrees with the other ranks which names are ready on every
// rank, fuses them and reduces them (see docs/architecture.md). A name identifies one
// collective while it is in flight; the same name may be reused once its handle completed
// (training loops reuse parameter names every step, which makes the steady state a cache hit).
// Unnamed calls (empty name) get "<collective>.noname.<n>" from a per-process counter; then
// the call order of unnamed calls must match across ranks.
//
// Buffers: `in`/`out` (and `tensor`) belong to the caller and must stay valid and untouched
// until the handle completed. in == out (same data pointer) is in place.
//
// Threads: init and shutdown from one thread, not concurrently with each other or with
// enqueues. Everything else is safe from any thread once init returned OK.
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
}  // namespace detail

// Settings given in code. Each pair is a HORA_* variable name and its value, validated exactly
// like the environment variable, and taking precedence over it ({"HORA_FUSION_THRESHOLD",
// "0"}). An unknown name is an init error.
struct InitOptions {
  std::vector<std::pair<std::string, std::string>> settings;
};

// Initialises hora: parses the configuration (Config::from_env: every HORA_* variable,
// validated), the rank layout (core/layout.h lists the launchers understood), applies
// HORA_LOG_LEVEL and HORA_CPU_ISA (failing when the CPU lacks the ISA asked for), connects
// the rendezvous store, waits for every rank (HORA_START_TIMEOUT_S; the error names the ranks
// that never arrived), creates the communicator of HORA_BACKEND and starts the engine.
// Calling init again while initialised is a no-op returning OK; init after shutdown starts
// afresh. Blocks at most about HORA_START_TIMEOUT_S.
Status init();
Status init(const InitOptions& options);

// Stops the engine (handles still pending fail with kFailedPrecondition naming the tensor;
// when any rank shuts down, the others' later collectives fail too), then releases everything
// init created. Idempotent, safe from a destructor; OK when not initialised. Blocks at most
// HORA_START_TIMEOUT_S when this rank hosts the store (it waits for the others to finish).
Status shutdown();

bool is_initialized();

// The layout of the job. REQUIRES: is_initialized(); each returns -1 otherwise.
int rank();
int size();
int local_rank();  // among the ranks on this host
int local_size();
int cross_rank();  // index of this host among the job's hosts
int cross_size();

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

  // For hora's own layers.
  explicit Handle(std::shared_ptr<detail::HandleState> state) : state_(std::move(state)) {}
  const std::shared_ptr<detail::HandleState>& state() const { return state_; }

 private:
  std::shared_ptr<detail::HandleState> state_;
};

// How an allreduce combines and scales. op must be one of ReduceOp; compression applies to
// float32 tensors only (kInvalidArgument otherwise) and must be the same on every rank.
struct AllreduceOptions {
  ReduceOp op = ReduceOp::kAverage;
  double prescale = 1.0;
  double postscale = 1.0;
  Compression compression = Compression::kNone;
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

// Allreduce: out = postscale * op_over_ranks(prescale * in). kAverage is kSum with postscale
// multiplied by 1/size. `out` has in's dtype and element count.
Handle allreduce_async(const std::string& name, const TensorView& in, const TensorView& out,
                       ReduceOp op = ReduceOp::kAverage, double prescale = 1.0,
                       double postscale = 1.0);
Handle allreduce_async(const std::string& name, const TensorView& in, const TensorView& out,
                       const AllreduceOptions& options);
// A list enqueued atomically and fused as a unit (the same op and scales for every entry).
// One handle for the whole group: it completes when every entry did.
Handle grouped_allreduce_async(const std::vector<std::string>& names,
                               const std::vector<TensorView>& ins,
                               const std::vector<TensorView>& outs,
                               ReduceOp op = ReduceOp::kAverage, double prescale = 1.0,
                               double postscale = 1.0);
Handle grouped_allreduce_async(const std::vector<std::string>& names,
                               const std::vector<TensorView>& ins,
                               const std::vector<TensorView>& outs,
                               const AllreduceOptions& options);
// Several independent allreduces enqueued at once: one pass through the engine's queue (one
// lock, one wake-up) for tensors that are ready together, e.g. a step's gradients. Each gets
// its own handle (returned in order) and is negotiated and fused like allreduce_async; they
// need not complete together. All or nothing: when a tensor is bad, or a name repeats in `names` or
// is still in flight, nothing is enqueued and every returned handle fails with that error, which
// names the tensor (every rank that made the same call reports it). Empty names are generated as
// for allreduce_async, in order.
std::vector<Handle> allreduce_async_batch(const std::vector<std::string>& names,
                                          const std::vector<TensorView>& ins,
                                          const std::vector<TensorView>& outs,
                                          const AllreduceOptions& options);
// Allgather along the first dimension (which may differ per rank; the others must match).
// The result is in handle.output() with shape [sum of first dims, ...].
Handle allgather_async(const std::string& name, const TensorView& in,
                       OutputAllocator allocate = nullptr);
// Broadcast of root's `tensor` into every rank's `tensor`, in place.
Handle broadcast_async(const std::string& name, const TensorView& tensor, int root);
// Alltoall: splits[p] first-dimension rows of `in` (in rank order) go to rank p; splits sum
// to in's first dimension (empty splits = an even split, which must then divide it). The
// result is in handle.output(); handle.received_splits()[p] rows came from p.
Handle alltoall_async(const std::string& name, const TensorView& in,
                      const std::vector<int64_t>& splits = {}, OutputAllocator allocate = nullptr);
// Reducescatter along the first dimension: rank r gets the reduction of rows block r, the
// first (rows % size) ranks one row more than the others, in handle.output().
Handle reducescatter_async(const std::string& name, const TensorView& in,
                           ReduceOp op = ReduceOp::kAverage, OutputAllocator allocate = nullptr);

// Blocking forms (Handle::wait(): until complete, bounded by the other ranks' liveness).
Status allreduce(const std::string& name, const TensorView& in, const TensorView& out,
                 ReduceOp op = ReduceOp::kAverage, double prescale = 1.0, double postscale = 1.0);
Status grouped_allreduce(const std::vector<std::string>& names, const std::vector<TensorView>& ins,
                         const std::vector<TensorView>& outs, ReduceOp op = ReduceOp::kAverage,
                         double prescale = 1.0, double postscale = 1.0);
Status broadcast(const std::string& name, const TensorView& tensor, int root);
// What the blocking allgather, alltoall and reducescatter return: the output tensor (bytes of
// the input's dtype, and its shape) and, for alltoall, the rows that came from each rank.
struct CollectiveResult {
  std::vector<uint8_t> data;
  std::vector<int64_t> shape;
  std::vector<int64_t> received_splits;
};
StatusOr<CollectiveResult> allgather(const std::string& name, const TensorView& in);
StatusOr<CollectiveResult> alltoall(const std::string& name, const TensorView& in,
                                    const std::vector<int64_t>& splits = {});
StatusOr<CollectiveResult> reducescatter(const std::string& name, const TensorView& in,
                                         ReduceOp op = ReduceOp::kAverage);
// Returns once every rank called barrier. Without a timeout it waits as long as the engine
// runs (a dead peer fails it); with one it returns kTimeout when the others have not all
// arrived in time (the barrier stays pending: a later barrier call waits for it again).
Status barrier();
Status barrier(std::chrono::milliseconds timeout);
Handle barrier_async();
// Uneven data: this rank has no more batches. Until every rank joined, this rank
// contributes zeros to every allreduce the others run (an allreduce with min, max or
// product, or any other collective, then fails on every rank: zeros are only the identity
// of sum and average). Average still divides by size. Returns the last rank to join, the
// same on every rank.
StatusOr<int> join();
StatusOr<int> join(std::chrono::milliseconds timeout);
// The join as a handle: handle.last_joined() once complete.
Handle join_async();

// Counters of this process's engine, for tests and benchmarks.
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
// REQUIRES: is_initialized(); zeros otherwise.
EngineStats engine_stats();

}  // namespace hora
