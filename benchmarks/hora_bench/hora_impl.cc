// hora's own algorithms (collectives/algorithms/) over a communicator of one backend, made for
// the benchmark beside the job's so no other thread ever touches it. Allreduce runs the
// algorithm given (auto asks the selector per size, as the engine does, with the job's
// topology: its hosts and measured links; hierarchical runs over that topology, and so does
// allgather under --algo hierarchical); the other
// collectives run hora's one algorithm each (ring allgatherv, pipelined broadcast, ring
// reducescatter, pairwise alltoallv), or the backend's own for `native`. Scratch comes from
// a ScratchPool that only grows, so a timed call allocates no data-sized memory.
#include <chrono>
#include <cstring>
#include <memory>
#include <string>

#include "benchmarks/hora_bench/implementation.h"
#include "benchmarks/hora_bench/native_call.h"
#include "collectives/algorithms/algorithms.h"
#include "collectives/algorithms/hierarchical.h"
#include "collectives/calibration.h"
#include "collectives/scratch_pool.h"
#include "collectives/selector.h"
#include "core/context.h"
#include "hora/logging.h"

namespace hora {
namespace bench {
namespace {

using collectives::Algorithm;

class HoraImplementation : public Implementation {
 public:
  HoraImplementation(std::string name, Algorithm algo, std::shared_ptr<OwnCommunicator> own,
                     const collectives::Topology* topology)
      : name_(std::move(name)),
        algo_(algo),
        own_(std::move(own)),
        comm_(own_->comm.get()),
        topology_(topology) {}

  const std::string& name() const override { return name_; }
  bool is_hora() const override { return true; }

  Status supports(const Call& call) const override {
    if (call.collective == Collective::kAlltoall && call.in_place) {
      return Status::unimplemented("hora's alltoall runs out of place only");
    }
    return Status::OK();
  }

  std::string choice(const Call& c) const override {
    if (algo_ != Algorithm::kAuto || c.collective != Collective::kAllreduce) return "";
    return collectives::algorithm_name(
        collectives::select_allreduce(c.count * data_type_bytes(c.dtype), comm_->size(),
                                      comm_->cost_model(), Algorithm::kAuto, topology_)
            .algorithm);
  }

  std::string cost_model() const override { return comm_->cost_model(); }

  // Owns the topology it reads when it is its own (a calibration of its communicator).
  void keep(std::unique_ptr<collectives::Topology> topology) {
    own_topology_ = std::move(topology);
  }

  Status run(const Call& c) override {
    collectives::AlgorithmOptions options;
    options.deadline = c.deadline;
    options.scratch = &scratch_;
    options.topology = topology_;
    // An allreduce, native included, goes through run_allreduce, the entry point auto's
    // column goes through too, so auto/algo compares the choice and not two entry points.
    if (algo_ == Algorithm::kNative && c.collective != Collective::kAllreduce)
      return run_native(*comm_, c);
    const int n = comm_->size();
    switch (c.collective) {
      case Collective::kAllreduce:
        return collectives::run_allreduce(algo_, *comm_, c.in, c.out, c.count, c.dtype, c.op,
                                          options);
      case Collective::kAllgather:
        if (algo_ == Algorithm::kHierarchical && topology_ != nullptr)
          return collectives::hierarchical_allgatherv(
              *comm_, *topology_, c.in, c.out, std::vector<size_t>(static_cast<size_t>(n), c.count),
              c.dtype, options);
        return collectives::ring_allgatherv(*comm_, c.in, c.out,
                                            std::vector<size_t>(static_cast<size_t>(n), c.count),
                                            c.dtype, options);
      case Collective::kBroadcast:
        return collectives::pipelined_broadcast(*comm_, c.in, c.out, c.count, c.dtype, c.root,
                                                options);
      case Collective::kReducescatter:
        return collectives::ring_reducescatter(*comm_, c.in, c.out,
                                               std::vector<size_t>(static_cast<size_t>(n), c.count),
                                               c.dtype, c.op, options);
      case Collective::kAlltoall: {
        const std::vector<size_t> counts(static_cast<size_t>(n), c.count);
        return collectives::pairwise_alltoallv(*comm_, c.in, counts, c.out, counts, c.dtype,
                                               options);
      }
    }
    return Status::internal("hora implementation: unknown collective");
  }

 private:
  const std::string name_;
  const Algorithm algo_;
  // Shared by every hora column of the run (make_implementations): the columns compare the
  // algorithms, not the placement of separate communicators' shared memory.
  std::shared_ptr<OwnCommunicator> own_;
  collectives::Communicator* comm_;  // own_'s
  // The job's (its ranks are comm_'s), borrowed; or own_topology_: the job's with a
  // calibration of comm_.
  const collectives::Topology* topology_;
  std::unique_ptr<collectives::Topology> own_topology_;
  collectives::ScratchPool scratch_;
};

}  // namespace

StatusOr<std::unique_ptr<Implementation>> make_hora_implementation(
    const ImplementationEnv& env, std::shared_ptr<OwnCommunicator> own, Algorithm algo) {
  const std::string name =
      algo == Algorithm::kAuto ? "hora" : std::string("hora-") + collectives::algorithm_name(algo);
  const collectives::Topology* topology =
      env.context != nullptr ? &env.context->topology() : nullptr;
  std::unique_ptr<collectives::Topology> own_topology;
  // auto over another backend than the job's (--backend builtin under mpirun's mpi job): the
  // job's calibration was measured on another cost model, so calibrate this communicator as
  // init calibrates the job's (same budget, HORA_CALIBRATE_MS), collectively on every rank.
  const double budget_ms = env.context != nullptr ? env.context->config().calibrate_ms : 0;
  if (algo == Algorithm::kAuto && topology != nullptr && budget_ms > 0 && own->comm->size() > 1 &&
      (topology->calibration == nullptr ||
       !topology->calibration->applies_to(own->comm->cost_model()))) {
    collectives::CalibrationOptions co;
    co.budget = std::chrono::milliseconds(static_cast<int64_t>(budget_ms));
    auto cal = collectives::calibrate_allreduce(
        *own->comm, topology, co, Deadline::after_seconds(env.context->config().timeout_s));
    if (!cal.ok()) return cal.status().with_context(" (hora-bench: calibrating " + name + ")");
    HORA_LOG(kDebug) << "hora-bench: " << name << " over " << own->comm->cost_model()
                     << " calibrated in " << cal.value().took_ms
                     << " ms: " << cal.value().describe();
    own_topology = std::make_unique<collectives::Topology>(*topology);
    own_topology->calibration =
        std::make_shared<const collectives::AllreduceCalibration>(std::move(cal).value());
    topology = own_topology.get();
  }
  auto impl = std::unique_ptr<HoraImplementation>(
      new HoraImplementation(name, algo, std::move(own), topology));
  impl->keep(std::move(own_topology));
  return std::unique_ptr<Implementation>(std::move(impl));
}

}  // namespace bench
}  // namespace hora
