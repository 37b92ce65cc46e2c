// Runs one hora-bench Call through a Communicator's native collectives (the backend library's
// own algorithms), shared by hora's "native" column and Gloo's columns. Average is run as a
// sum and scaled here, since not every backend reduces with an average. Blocking; the caller's
// thread must be the only user of `comm`.
#pragma once

#include "benchmarks/hora_bench/implementation.h"
#include "collectives/backends/registry.h"
#include "collectives/communicator.h"
#include "hora/status.h"

namespace hora {
namespace bench {

Status run_native(collectives::Communicator& comm, const Call& call);

// Options for the collective's backend: the same as the job's (core/context.cc fills them the
// same way), for communicators a benchmark makes beside the job's.
collectives::BackendOptions backend_options_for(const ImplementationEnv& env);

// A store scoped to one implementation: "hora-bench/<name>/" over the job's store.
StatusOr<std::unique_ptr<collectives::Store>> implementation_store(const ImplementationEnv& env,
                                                                   const std::string& name);

// A communicator of `backend` for one implementation, over its own scoped store (declared
// first, so it outlives the communicator's rendezvous keys).
struct OwnCommunicator {
  std::unique_ptr<collectives::Store> store;
  std::unique_ptr<collectives::Communicator> comm;
};
StatusOr<OwnCommunicator> implementation_communicator(const ImplementationEnv& env,
                                                      const std::string& name,
                                                      const std::string& backend);

}  // namespace bench
}  // namespace hora
