// Implementation: one way of running a collective that hora-bench times, side by side with
// the others on the same buffers in the same run: hora through one of its algorithms
// (hora_impl.cc), Gloo's own collectives (gloo_impl.cc), MPI's (mpi_impl.cc), NCCL's on GPU
// buffers (nccl_impl.cc), hora's engine (engine_impl.cc), and the transport's ceiling for a
// ring (wire_impl.cc).
//
// Each implementation owns its communicator (created over its own PrefixStore of the job's
// store, so keys never clash and no other thread ever uses it). Calls are collective: every
// rank must make the same calls in the same order. One thread uses an implementation.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/hora_bench/collective.h"
#include "benchmarks/hora_bench/options.h"
#include "collectives/rendezvous/store.h"
#include "core/base/deadline.h"
#include "hora/data_type.h"
#include "hora/reduce_op.h"
#include "hora/status.h"

namespace hora {
class Context;

namespace bench {

// One call. `in` and `out` hold input_elements / output_elements (collective.h) of dtype.
// In place: for allreduce and broadcast in == out; for allgather `in` is this rank's block
// of `out`; for reducescatter `out` is this rank's block of `in`.
struct Call {
  Collective collective = Collective::kAllreduce;
  const void* in = nullptr;
  void* out = nullptr;
  size_t count = 0;
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  bool in_place = false;
  bool on_device = false;  // in and out are GPU memory (--device cuda)
  Deadline deadline = Deadline::after_seconds(300);
};

class Implementation {
 public:
  virtual ~Implementation() = default;
  // The column name: "hora-ring", "gloo-bcube", "mpi", ...
  virtual const std::string& name() const = 0;
  // hora's own (the numerator of the ratio column) rather than a baseline.
  virtual bool is_hora() const = 0;
  // A bound rather than a competitor (the "wire" column): left out of the ratio, not checked.
  virtual bool is_reference() const { return false; }
  // Runs through hora's engine (the engine column): the engine must run while it is timed.
  // Every other implementation is timed with the engine parked (runner.h).
  virtual bool uses_engine() const { return false; }
  // OK when this implementation can run `call`'s collective, dtype, op and placement;
  // otherwise why not (the table then shows "n/a"). The answer is the same on every rank.
  virtual Status supports(const Call& call) const = 0;
  // Runs one collective. Blocks until done or call.deadline.
  virtual Status run(const Call& call) = 0;
  // hora's auto only: the algorithm the selector picks for `call` ("ring", "native", ...),
  // the same on every rank; empty for every other implementation.
  virtual std::string choice(const Call& call) const {
    (void)call;
    return "";
  }
  // hora's only: the cost model of the communicator it runs on (Communicator::cost_model():
  // "builtin-shm" when the builtin backend has shared memory); empty for the others.
  virtual std::string cost_model() const { return ""; }
};

// What every factory needs.
struct ImplementationEnv {
  Context* context = nullptr;  // hora's runtime (store, config, layout)
  int rank = 0;
  int size = 1;
  std::string job_backend;  // HORA_BACKEND resolved: "builtin", "gloo", "mpi"
  int gpu = -1;             // --device cuda:N resolved (sweep_memory.h); -1: host buffers
};

struct OwnCommunicator;  // native_call.h

// hora's algorithm `algo` over `own`, a communicator of the run's backend
// (implementation_communicator) that every hora column shares.
StatusOr<std::unique_ptr<Implementation>> make_hora_implementation(
    const ImplementationEnv& env, std::shared_ptr<OwnCommunicator> own,
    collectives::Algorithm algo);
// Gloo's own collectives (allreduce: ring when !bcube, else bcube). kUnimplemented when
// hora was built without Gloo.
StatusOr<std::unique_ptr<Implementation>> make_gloo_implementation(const ImplementationEnv& env,
                                                                   bool bcube);
// The transport's ceiling for a ring over `backend`: the bytes of a ring allreduce, moved along
// the ring with no reduction (wire_impl.cc).
StatusOr<std::unique_ptr<Implementation>> make_wire_implementation(const ImplementationEnv& env,
                                                                   const std::string& backend);
// MPI on MPI_COMM_WORLD. kUnimplemented when hora was built without MPI or the job was not
// launched by mpirun. Initialises MPI when nobody has (and finalises it when destroyed).
StatusOr<std::unique_ptr<Implementation>> make_mpi_implementation(const ImplementationEnv& env);
// NCCL's own collectives (ncclAllReduce, ...) on a communicator of its own over env.gpu: the
// reference for hora on the GPU. kUnimplemented when hora was built without HORA_WITH_NCCL.
StatusOr<std::unique_ptr<Implementation>> make_nccl_implementation(const ImplementationEnv& env);
// Named async allreduces through hora's engine (the job's communicator, through the engine's
// thread only).
StatusOr<std::unique_ptr<Implementation>> make_engine_implementation(const ImplementationEnv& env);

// The implementations `options` asks for, in column order: hora with --algo (or every hora
// algorithm with --compare hora), then Gloo's and MPI's. An implementation asked for by
// --compare that cannot be made fails the whole run (the same on every rank).
StatusOr<std::vector<std::unique_ptr<Implementation>>> make_implementations(
    const Options& options, const ImplementationEnv& env);

}  // namespace bench
}  // namespace hora
