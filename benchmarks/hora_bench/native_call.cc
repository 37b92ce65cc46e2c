// Native collectives for one Call, and the set-up shared by every communicator hora-bench
// makes (see native_call.h).
#include "benchmarks/hora_bench/native_call.h"

#include <cstring>

#include "collectives/algorithms/algorithms.h"
#include "collectives/algorithms/buffer_access.h"
#include "collectives/backends/registry.h"
#include "collectives/rendezvous/prefix_store.h"
#include "core/context.h"

namespace hora {
namespace bench {

Status run_native(collectives::Communicator& comm, const Call& c) {
  const bool average = c.op == ReduceOp::kAverage;
  const ReduceOp op = average ? ReduceOp::kSum : c.op;
  const int n = comm.size();
  switch (c.collective) {
    case Collective::kAllreduce:
      HORA_RETURN_IF_ERROR(comm.allreduce(c.in, c.out, c.count, c.dtype, op, c.deadline));
      if (average && n > 1)
        HORA_RETURN_IF_ERROR(collectives::detail::scale(comm, c.out, c.count, c.dtype, 1.0 / n));
      return Status::OK();
    case Collective::kReducescatter: {
      const std::vector<size_t> counts(static_cast<size_t>(n), c.count);
      HORA_RETURN_IF_ERROR(comm.reducescatter(c.in, c.out, counts, c.dtype, op, c.deadline));
      if (average && n > 1)
        HORA_RETURN_IF_ERROR(collectives::detail::scale(comm, c.out, c.count, c.dtype, 1.0 / n));
      return Status::OK();
    }
    case Collective::kAllgather: {
      const std::vector<size_t> counts(static_cast<size_t>(n), c.count);
      return comm.allgatherv(c.in, c.out, counts, c.dtype, c.deadline);
    }
    case Collective::kBroadcast:
      if (!c.in_place && comm.rank() == c.root)
        HORA_RETURN_IF_ERROR(
            collectives::detail::copy_if_distinct(comm, c.in, c.out, c.count, c.dtype));
      return comm.broadcast(c.out, c.count, c.dtype, c.root, c.deadline);
    case Collective::kAlltoall: {
      const std::vector<size_t> counts(static_cast<size_t>(n), c.count);
      return comm.alltoallv(c.in, counts, c.out, counts, c.dtype, c.deadline);
    }
  }
  return Status::internal("run_native: unknown collective");
}

collectives::BackendOptions backend_options_for(const ImplementationEnv& env) {
  const Config& config = env.context->config();
  const RankLayout& l = env.context->layout();
  collectives::BackendOptions options;
  options.gloo_iface = config.gloo_iface;
  options.rendezvous_addr = l.has_store() ? l.store_addr : "127.0.0.1";
  options.timeout_s = config.timeout_s;
  options.shm_enabled = config.shm_enabled;
  options.secret = l.secret;
  options.local_rank = l.local_rank;
  options.device = env.gpu;
  return options;
}

StatusOr<std::unique_ptr<collectives::Store>> implementation_store(const ImplementationEnv& env,
                                                                   const std::string& name) {
  // hora::init succeeded, so a job of several ranks has a real store: the launcher's, or the
  // one rank 0 started and shared over MPI (plain mpirun with HORA_BACKEND=mpi).
  return std::unique_ptr<collectives::Store>(
      new collectives::PrefixStore("hora-bench/" + name + "/", env.context->store()));
}

StatusOr<OwnCommunicator> implementation_communicator(const ImplementationEnv& env,
                                                      const std::string& name,
                                                      const std::string& backend) {
  OwnCommunicator own;
  HORA_ASSIGN_OR_RETURN(own.store, implementation_store(env, name + "-" + backend));
  HORA_ASSIGN_OR_RETURN(own.comm,
                        collectives::make_communicator(
                            backend, env.rank, env.size, *own.store, backend_options_for(env),
                            Deadline::after_seconds(env.context->config().start_timeout_s)));
  return own;
}

}  // namespace bench
}  // namespace hora
