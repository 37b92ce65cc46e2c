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
// A call whose name is still in flight on this rank (or twice in one group) is refused at
// enqueue: the returned Handle is already failed when the call returns (poll() is true and
// wait() returns kInvalidArgument naming the tensor), as is one refused for bad input.
// Horovod raises ValueError at the call there; hora's Python adapters do so from this state.
//
// Buffers: `in`/`out` (and `tensor`) belong to the caller and must stay valid and untouched
// until the handle completed. in == out (same data pointer) is in place.
//
// Threads: init and shutdown from one thread, not concurrently with each other or with
// enqueues. Everything else is safe from any thread once init returned OK.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "hora/compression.h"
#include "hora/data_type.h"
#include "hora/process_set.h"
#include "hora/reduce_op.h"
#include "hora/status.h"
#include "hora/tensor_view.h"
#include "hora/types.h"

namespace hora {

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

// The running job's settings, for adapters that wait or report on their own.
// The communicator's backend ("builtin", "gloo", "mpi", "nccl"): kFailedPrecondition when not
// initialised.
StatusOr<std::string> backend_name();
// HORA_TIMEOUT_S of the running job, in seconds; before init (or after shutdown) its default,
// 300. Thread-safe.
double timeout_s();
// The backends built into this hora, in preference order ("builtin" first). Any time, any
// thread.
std::vector<std::string> available_backends();
// Whether every host runs the same number of ranks (Horovod's is_homogeneous); the same on
// every rank. Fails before init.
StatusOr<bool> is_homogeneous();

// The timeline at run time (Horovod's start_timeline / stop_timeline): from now on rank 0
// writes a Chrome trace of the engine's work to `path` (see HORA_TIMELINE, which it replaces
// if one is being written); `mark_cycles` adds a CYCLE_START mark at each engine round.
// Other ranks write nothing and return OK. Fails before init, for an empty path, or (rank 0)
// when the file cannot be created. stop_timeline writes what is left and closes the file, a
// complete JSON array (OK when none is open). Any thread; neither is collective.
Status start_timeline(const std::string& path, bool mark_cycles = false);
Status stop_timeline();

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
                       OutputAllocator allocate = nullptr, int process_set = kGlobalProcessSet);
// Broadcast of root's `tensor` into every rank's `tensor`, in place. `root` is a global rank
// (a member of the set, as in Horovod).
Handle broadcast_async(const std::string& name, const TensorView& tensor, int root,
                       int process_set = kGlobalProcessSet);
// Alltoall: splits[p] first-dimension rows of `in` (in rank order) go to rank p; splits sum
// to in's first dimension (empty splits = an even split, which must then divide it). The
// result is in handle.output(); handle.received_splits()[p] rows came from p.
Handle alltoall_async(const std::string& name, const TensorView& in,
                      const std::vector<int64_t>& splits = {}, OutputAllocator allocate = nullptr,
                      int process_set = kGlobalProcessSet);
// Reducescatter along the first dimension: rank r gets the reduction of rows block r, the
// first (rows % size) ranks one row more than the others, in handle.output().
Handle reducescatter_async(const std::string& name, const TensorView& in,
                           ReduceOp op = ReduceOp::kAverage, OutputAllocator allocate = nullptr,
                           int process_set = kGlobalProcessSet);
// With Horovod's scale factors: this rank's block of postscale * op_over_ranks(prescale * in)
// (for kAverage the division by size comes before the postscale). Host tensors only for
// factors other than 1 (a GPU tensor's call fails with kUnimplemented).
Handle reducescatter_async(const std::string& name, const TensorView& in, ReduceOp op,
                           double prescale, double postscale, OutputAllocator allocate = nullptr,
                           int process_set = kGlobalProcessSet);

// Several allgathers (reducescatters, sharing op and scale factors) enqueued together, one
// handle each (hora.torch's grouped_allgather and grouped_reducescatter): either every one is
// enqueued or none is (a name in flight or twice in `names`, or bad input, fails every
// handle). Each negotiates on its own; allocators[i] makes output i (may be null).
std::vector<Handle> allgather_async_batch(const std::vector<std::string>& names,
                                          const std::vector<TensorView>& ins,
                                          std::vector<OutputAllocator> allocators,
                                          int process_set = kGlobalProcessSet);
std::vector<Handle> reducescatter_async_batch(const std::vector<std::string>& names,
                                              const std::vector<TensorView>& ins, ReduceOp op,
                                              double prescale, double postscale,
                                              std::vector<OutputAllocator> allocators,
                                              int process_set = kGlobalProcessSet);

// Blocking forms (Handle::wait(): until complete, bounded by the other ranks' liveness).
Status allreduce(const std::string& name, const TensorView& in, const TensorView& out,
                 ReduceOp op = ReduceOp::kAverage, double prescale = 1.0, double postscale = 1.0);
Status grouped_allreduce(const std::vector<std::string>& names, const std::vector<TensorView>& ins,
                         const std::vector<TensorView>& outs, ReduceOp op = ReduceOp::kAverage,
                         double prescale = 1.0, double postscale = 1.0);
Status allreduce(const std::string& name, const TensorView& in, const TensorView& out,
                 const AllreduceOptions& options);
Status broadcast(const std::string& name, const TensorView& tensor, int root,
                 int process_set = kGlobalProcessSet);
// Allgather, alltoall and reducescatter return the output tensor (CollectiveResult, hora/types.h).
StatusOr<CollectiveResult> allgather(const std::string& name, const TensorView& in,
                                     int process_set = kGlobalProcessSet);
StatusOr<CollectiveResult> alltoall(const std::string& name, const TensorView& in,
                                    const std::vector<int64_t>& splits = {},
                                    int process_set = kGlobalProcessSet);
StatusOr<CollectiveResult> reducescatter(const std::string& name, const TensorView& in,
                                         ReduceOp op = ReduceOp::kAverage, double prescale = 1.0,
                                         double postscale = 1.0,
                                         int process_set = kGlobalProcessSet);
// Returns once every rank called barrier. Without a timeout it waits as long as the engine
// runs (a dead peer fails it); with one it returns kTimeout when the others have not all
// arrived in time (the barrier stays pending: a later barrier call waits for it again).
Status barrier();
Status barrier(std::chrono::milliseconds timeout);
// The barrier of one process set: its members only.
Status barrier(std::chrono::milliseconds timeout, int process_set);
Handle barrier_async(int process_set = kGlobalProcessSet);
// Uneven data: this rank has no more batches. Until every rank joined, this rank
// contributes zeros to every allreduce the others run (an allreduce with min, max or
// product, or any other collective, then fails on every rank: zeros are only the identity
// of sum and average). Average still divides by size. Returns the last rank to join, the
// same on every rank.
StatusOr<int> join();
StatusOr<int> join(std::chrono::milliseconds timeout);
// The join of one process set: its members only; returns the last member to join (a global
// rank).
StatusOr<int> join(std::chrono::milliseconds timeout, int process_set);
// The join as a handle: handle.last_joined() once complete (a global rank).
Handle join_async(int process_set = kGlobalProcessSet);

// Process sets (hora/process_set.h). Every collective above takes the id of the set it runs on
// (AllreduceOptions::process_set for the allreduces); only the set's members may call it (any
// other rank gets kInvalidArgument naming the set), the other ranks take no part, and sizes,
// splits and outputs are the set's (rank i of the set is ranks()[i]). A set's errors name it.
//
// The global set: every rank of the job, id 0. REQUIRES: is_initialized() (else an empty set).
ProcessSet global_process_set();
// Registers a set of `ranks` (any order; distinct ranks of the job; not the ranks of a set that
// exists already) and returns it with its id. Collective over the whole job: every rank calls
// it with the same ranks, in the same order as its other add/remove calls (kMismatch naming the
// ranks that differ otherwise), and the set's members connect its communicator before it
// returns (bounded by HORA_START_TIMEOUT_S). Needs a job with dynamic process sets
// (HORA_DYNAMIC_PROCESS_SETS=1 or InitOptions::dynamic_process_sets), as in Horovod; sets
// known at the start are better given to init (InitOptions::process_sets).
StatusOr<ProcessSet> add_process_set(const std::vector<int>& ranks);
// Unregisters set `process_set_id`: its pending collectives fail, its engine stops and its
// communicator and caches are released. Collective over the whole job, like add_process_set.
// The global set cannot be removed; an id not registered (or removed before) is
// kInvalidArgument naming it.
Status remove_process_set(int process_set_id);
// The registered set of that id, or kInvalidArgument.
StatusOr<ProcessSet> get_process_set(int process_set_id);
// Every registered set, the global one first, then by id.
std::vector<ProcessSet> process_sets();
// Whether add_process_set and remove_process_set may be called in this job.
bool dynamic_process_sets();

// The engine's counters (EngineStats, hora/types.h). Internal, for hora's own tests and
// benchmarks (and hora.engine_stats() in Python, which exposes it for the same use): no stability
// promise. REQUIRES: is_initialized(); zeros otherwise.
EngineStats engine_stats();
// What HORA_AUTOTUNE=1 tuned on the global set's engine (AutotuneState, hora/types.h): the
// values in force, whether the search converged, and each change with the step it took effect
// at. REQUIRES: is_initialized(); a default state otherwise.
AutotuneState autotune_state();

}  // namespace hora
