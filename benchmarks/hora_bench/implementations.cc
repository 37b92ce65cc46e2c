// Which implementations one run compares, in column order (see make_implementations in
// implementation.h).
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/hora_bench/implementation.h"
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

// Whether the backend has native collectives for hora's "native" column (builtin has none).
bool has_native(const std::string& backend) {
  return collectives::estimate_allreduce_us(collectives::Algorithm::kNative, backend, 8, 2) >= 0;
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
  std::vector<Algorithm> algos = {o.algo};
  // Any --compare runs hora through each of its algorithms beside the others.
  if (!o.compare.empty()) {
    algos = {Algorithm::kAuto};
    if (o.collective == Collective::kAllreduce) {
      algos.insert(algos.end(),
                   {Algorithm::kRing, Algorithm::kTree, Algorithm::kRecursiveDoubling});
    }
    if (has_native(backend)) algos.push_back(Algorithm::kNative);
    // Across hosts: hierarchical over the job's topology (allreduce and allgather).
    const bool hosts = env.context != nullptr && env.context->topology().hosts() > 1;
    if (hosts && (o.collective == Collective::kAllreduce || o.collective == Collective::kAllgather))
      algos.push_back(Algorithm::kHierarchical);
  }
  if (o.algo == Algorithm::kNative && !has_native(backend)) {
    return Status::invalid_argument("--algo native: backend " + backend +
                                    " has no native collectives of its own");
  }
  for (Algorithm a : algos) {
    HORA_ASSIGN_OR_RETURN(auto impl, make_hora_implementation(env, backend, a));
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
