// Gloo's own collectives as a baseline: a Gloo communicator of its own (a full TCP mesh from
// Debian's libgloo, over a PrefixStore of the job's store) whose native calls run Gloo's
// algorithms: allreduce ring or bcube (gloo::allreduce with the algorithm option),
// allgatherv, broadcast, reduce-scatter (halving-doubling) and alltoallv.
#include <memory>
#include <string>

#include "benchmarks/hora_bench/implementation.h"
#include "benchmarks/hora_bench/native_call.h"
#include "core/context.h"

#if HORA_HAVE_GLOO
#include "collectives/backends/gloo/gloo_communicator.h"
#endif

namespace hora {
namespace bench {

#if HORA_HAVE_GLOO
namespace {

class GlooImplementation : public Implementation {
 public:
  GlooImplementation(std::string name, std::unique_ptr<collectives::Store> store,
                     std::unique_ptr<collectives::Communicator> comm)
      : name_(std::move(name)), store_(std::move(store)), comm_(std::move(comm)) {}

  const std::string& name() const override { return name_; }
  bool is_hora() const override { return false; }

  Status supports(const Call& call) const override {
    if (call.collective == Collective::kAlltoall && call.in_place) {
      return Status::unimplemented("Gloo's alltoallv runs out of place only");
    }
    return Status::OK();
  }

  Status run(const Call& call) override { return run_native(*comm_, call); }

 private:
  const std::string name_;
  std::unique_ptr<collectives::Store> store_;  // outlives comm_
  std::unique_ptr<collectives::Communicator> comm_;
};

}  // namespace

StatusOr<std::unique_ptr<Implementation>> make_gloo_implementation(const ImplementationEnv& env,
                                                                   bool bcube) {
  const std::string name = bcube ? "gloo-bcube" : "gloo-ring";
  HORA_ASSIGN_OR_RETURN(auto store, implementation_store(env, name));
  const collectives::BackendOptions backend = backend_options_for(env);
  collectives::GlooOptions options;
  options.iface = backend.gloo_iface;
  options.rendezvous_addr = backend.rendezvous_addr;
  options.timeout_s = backend.timeout_s;
  options.allreduce_bcube = bcube;
  HORA_ASSIGN_OR_RETURN(auto comm,
                        collectives::create_gloo_communicator(
                            env.rank, env.size, *store, options,
                            Deadline::after_seconds(env.context->config().start_timeout_s)));
  return std::unique_ptr<Implementation>(
      new GlooImplementation(name, std::move(store), std::move(comm)));
}

#else

StatusOr<std::unique_ptr<Implementation>> make_gloo_implementation(const ImplementationEnv&, bool) {
  return Status::unimplemented(
      "--compare gloo: hora was built without Gloo (install libgloo-dev and reconfigure)");
}

#endif

}  // namespace bench
}  // namespace hora
