// baseline_alone: one of hora-bench's baselines timed in a process without hora's runtime
// running, for fair_baseline_check.sh to compare with the same baseline inside hora-bench.
//
// The process joins the job's store and creates hora's Context (the job's communicator: no
// thread, no engine) only because the baseline rendezvouses through the store and hora-bench's
// timing loop (run_sweep, the same code as hora-bench's) needs a control communicator for its
// barriers between measurements. Nothing of hora runs while the baseline's calls are timed.
//
// Usage (under horarun): baseline_alone gloo-ring|gloo-bcube <hora-bench flags: -b -e -f -n -w>
// Rank 0 prints one line per size: "baseline_alone: IMPL SIZE_BYTES MEDIAN_US".
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/hora_bench/implementation.h"
#include "benchmarks/hora_bench/native_call.h"
#include "benchmarks/hora_bench/options.h"
#include "benchmarks/hora_bench/runner.h"
#include "collectives/backends/registry.h"
#include "core/config.h"
#include "core/context.h"
#include "core/layout.h"

namespace {

int fail(const std::string& what, const hora::Status& s) {
  std::fprintf(stderr, "baseline_alone: %s: %s\n", what.c_str(), s.to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace hora;
  using namespace hora::bench;
  if (argc < 2 || (std::string(argv[1]) != "gloo-ring" && std::string(argv[1]) != "gloo-bcube")) {
    std::fprintf(stderr, "usage: baseline_alone gloo-ring|gloo-bcube [hora-bench flags]\n");
    return 2;
  }
  const std::string impl_name = argv[1];
  std::vector<char*> args = {argv[0], const_cast<char*>("allreduce")};
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  StatusOr<Options> options = parse_options(static_cast<int>(args.size()), args.data());
  if (!options.ok()) return fail("options", options.status());
  StatusOr<Config> config = Config::from_env();
  if (!config.ok()) return fail("config", config.status());
  StatusOr<RankLayout> layout = read_rank_layout_from_env();
  if (!layout.ok()) return fail("layout", layout.status());
  auto context = Context::create(config.value(), layout.value());
  if (!context.ok()) return fail("context", context.status());

  ImplementationEnv env;
  env.context = context.value().get();
  env.rank = layout.value().rank;
  env.size = layout.value().size;
  env.job_backend = context.value()->communicator().backend_name();
  std::vector<std::unique_ptr<Implementation>> impls;
  auto gloo = make_gloo_implementation(env, impl_name == "gloo-bcube");
  if (!gloo.ok()) {
    if (gloo.status().code() == StatusCode::kUnimplemented) {
      std::printf("SKIPPED: %s\n", gloo.status().message().c_str());
      return 77;
    }
    return fail(impl_name, gloo.status());
  }
  impls.push_back(std::move(gloo).value());
  auto control_store = implementation_store(env, "control");
  if (!control_store.ok()) return fail("control store", control_store.status());
  auto control = collectives::make_communicator(
      "builtin", env.rank, env.size, *control_store.value(), backend_options_for(env),
      Deadline::after_seconds(config.value().start_timeout_s));
  if (!control.ok()) return fail("control communicator", control.status());

  SweepSettings settings;
  settings.options = options.value();
  settings.rank = env.rank;
  settings.ranks = env.size;
  settings.run_in_place = false;
  settings.timeout_s = config.value().timeout_s;
  auto results =
      run_sweep(settings, impls, *control.value(), [&](const std::vector<Measurement>& row) {
        if (env.rank != 0) return;
        for (const Measurement& m : row)
          std::printf("baseline_alone: %s %zu %.3f\n", m.impl.c_str(), m.size_bytes, m.median_us);
        std::fflush(stdout);
      });
  if (!results.ok()) return fail("sweep", results.status());
  impls.clear();
  control.value().reset();
  Status down = context.value()->shutdown();
  return down.ok() ? 0 : fail("shutdown", down);
}
