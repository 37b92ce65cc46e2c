// Which implementations one run compares, in column order (see make_implementations in
// implementation.h).
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/hora_bench/implementation.h"
#include "benchmarks/hora_bench/native_call.h"
#include "collectives/selector.h"
#include "core/context.h"

namespace hora {
namespace bench {
namespace {

bool wants(const Options& o, const char* name) {
  for (const std::string& c : o.compare) {
    if (c == name) return true;
  }
  return false;
}

// Whether a communicator of this cost model has native collectives for hora's "native"
// column (plain builtin, over TCP, has none; builtin-shm has its shared-memory allreduce).
bool has_native(const std::string& cost_model) {
  return collectives::estimate_allreduce_us(collectives::Algorithm::kNative, cost_model, 8, 2) >= 0;
}

}  // namespace

StatusOr<std::vector<std::unique_ptr<Implementation>>> make_implementations(
    const Options& o, const ImplementationEnv& env) {
  using collectives::Algorithm;
  std::vector<std::unique_ptr<Implementation>> impls;
  if (o.through_engine) {
    HORA_ASSIGN_OR_RETURN(auto engine, make_engine_implementation(env));
    impls.push_back(std::move(engine));
  }
  const std::string backend = o.backend.empty() ? env.job_backend : o.backend;
  // Any --compare runs hora through each of its algorithms beside the others: auto first,
  // then ring, tree, rd (allreduce), native when the communicator hora runs on has one (its
  // cost model tells: builtin's is "builtin-shm" when every rank is on one host), and
  // hierarchical across hosts.
  // One communicator for every hora column: each algorithm runs on the same shared memory
  // (or sockets), as a job's auto does, so the columns differ in the algorithm alone.
  HORA_ASSIGN_OR_RETURN(OwnCommunicator comm, implementation_communicator(env, "hora", backend));
  auto own = std::make_shared<OwnCommunicator>(std::move(comm));
  HORA_ASSIGN_OR_RETURN(auto first, make_hora_implementation(
                                        env, own, o.compare.empty() ? o.algo : Algorithm::kAuto));
  const std::string model = first->cost_model();
  if (o.algo == Algorithm::kNative &&
      !has_native(o.collective == Collective::kAllreduce ? model : backend)) {
    return Status::invalid_argument("--algo native: backend " + backend + " (" + model +
                                    ") has no native collectives of its own");
  }
  impls.push_back(std::move(first));
  std::vector<Algorithm> algos;
  if (!o.compare.empty()) {
    if (o.collective == Collective::kAllreduce) {
      algos.insert(algos.end(),
                   {Algorithm::kRing, Algorithm::kTree, Algorithm::kRecursiveDoubling});
    }
    // builtin-shm's native collective is its allreduce alone; other collectives need the
    // backend's own (gloo, mpi).
    if (has_native(o.collective == Collective::kAllreduce ? model : backend))
      algos.push_back(Algorithm::kNative);
    const bool hosts = env.context != nullptr && env.context->topology().hosts() > 1;
    if (hosts && (o.collective == Collective::kAllreduce || o.collective == Collective::kAllgather))
      algos.push_back(Algorithm::kHierarchical);
  }
  for (Algorithm a : algos) {
    HORA_ASSIGN_OR_RETURN(auto impl, make_hora_implementation(env, own, a));
    impls.push_back(std::move(impl));
  }
  if (wants(o, "gloo")) {
    HORA_ASSIGN_OR_RETURN(auto ring, make_gloo_implementation(env, false));
    impls.push_back(std::move(ring));
    if (o.collective == Collective::kAllreduce) {
      HORA_ASSIGN_OR_RETURN(auto bcube, make_gloo_implementation(env, true));
      impls.push_back(std::move(bcube));
    }
  }
  if (wants(o, "wire")) {
    HORA_ASSIGN_OR_RETURN(auto wire, make_wire_implementation(env, backend));
    impls.push_back(std::move(wire));
  }
  if (wants(o, "mpi")) {
    HORA_ASSIGN_OR_RETURN(auto mpi, make_mpi_implementation(env));
    impls.push_back(std::move(mpi));
  }
  if (wants(o, "nccl")) {
    HORA_ASSIGN_OR_RETURN(auto nccl, make_nccl_implementation(env));
    impls.push_back(std::move(nccl));
  }
  return impls;
}

}  // namespace bench
}  // namespace hora
