// hora-bench: bandwidth and latency of hora's collectives in nccl-tests' columns, side by side
// with Gloo's and MPI's on the same buffers in the same run (--compare), as a table on rank 0
// and optionally JSON, CSV and an SVG plot. Run under horarun (or mpirun).
//
// Exit codes: 0 all good; 1 a run error (a collective failed, a file could not be written);
// 2 bad arguments (one line and a usage hint on rank 0; every rank parses the same argv, so
// every rank exits 2 together, after hora::init so the message is printed once); 3 #wrong > 0.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/hora_bench/busy_load.h"
#include "benchmarks/hora_bench/export.h"
#include "benchmarks/hora_bench/implementation.h"
#include "benchmarks/hora_bench/machine.h"
#include "benchmarks/hora_bench/native_call.h"
#include "benchmarks/hora_bench/options.h"
#include "benchmarks/hora_bench/report.h"
#include "benchmarks/hora_bench/runner.h"
#include "benchmarks/hora_bench/svg_plot.h"
#include "benchmarks/hora_bench/sweep_memory.h"
#include "collectives/backends/registry.h"
#include "core/context.h"
#include "core/context_access.h"
#include "hora/hora.h"

namespace hora {
namespace bench {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitRunError = 1;
constexpr int kExitBadArguments = 2;
constexpr int kExitWrong = 3;

bool is_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") return true;
  }
  return false;
}

// Prints on rank 0, or on every rank when hora is not initialised (the rank is unknown).
void print_error(const std::string& line, bool with_usage) {
  if (hora::is_initialized() && hora::rank() != 0) return;
  std::fprintf(stderr, "hora-bench: %s\n", line.c_str());
  if (with_usage) std::fprintf(stderr, "%s\n", usage_hint().c_str());
}

std::vector<PlotSeries> plot_series(const std::vector<std::string>& impls,
                                    const std::vector<Measurement>& results) {
  std::vector<PlotSeries> series;
  for (const std::string& name : impls) {
    PlotSeries s;
    s.name = name;
    for (const Measurement& m : results) {
      if (m.impl == name && !m.in_place && m.available) {
        s.points.emplace_back(m.size_bytes, m.busbw_gbs);
      }
    }
    series.push_back(s);
  }
  return series;
}

// Turns hora's engine on (while the engine column is timed) or parks it (otherwise).
using SetEngine = std::function<Status(bool engine_needed)>;

// Nothing of hora runs beside a baseline: the engine (it answers a negotiation round every
// heartbeat from init on) stays parked except while the engine column is timed. Parking is
// agreed by every rank, and every rank runs the same sweep. It also keeps MPI_Allreduce on
// this thread apart from the engine's own MPI calls (MPI_THREAD_SERIALIZED).
SetEngine engine_switch(const Context& context) {
  const auto engine_wait =
      std::chrono::milliseconds(static_cast<int64_t>(context.config().timeout_s * 1000.0));
  return [engine_wait](bool engine_needed) -> Status {
    if (engine_needed) {
      detail::resume_engine();
      return Status::OK();
    }
    return detail::pause_engine(engine_wait);
  };
}

// The control communicator (builtin) for the sweep's barriers and reductions.
StatusOr<std::unique_ptr<collectives::Communicator>> make_control(const ImplementationEnv& env,
                                                                  const Context& context) {
  auto control_store = implementation_store(env, "control");
  if (!control_store.ok()) return control_store.status();
  return collectives::make_communicator("builtin", env.rank, env.size, *control_store.value(),
                                        backend_options_for(env),
                                        Deadline::after_seconds(context.config().start_timeout_s));
}

RunInfo run_info(const Options& options, const ImplementationEnv& env, const Context& context,
                 const std::vector<std::unique_ptr<Implementation>>& impls) {
  RunInfo info;
  info.options = options;
  info.ranks = env.size;
  info.backend = options.backend.empty() ? env.job_backend : options.backend;
  info.launcher = layout_source_name(context.layout().source);
  for (const auto& impl : impls) info.impls.push_back(impl->name());
  info.machine = machine_info();
  info.timestamp = utc_timestamp();
  return info;
}

// Rank 0's files: --json, --csv and --plot, in that order, up to the first failure (its
// Status as write_file gave it).
Status write_outputs(const Options& options, const RunInfo& info,
                     const std::vector<Measurement>& results) {
  Status written = Status::OK();
  if (!options.json_path.empty()) written = write_file(options.json_path, to_json(info, results));
  if (written.ok() && !options.csv_path.empty())
    written = write_file(options.csv_path, to_csv(info, results));
  if (written.ok() && !options.plot_path.empty()) {
    PlotText text;
    text.title = std::string(collective_name(options.collective)) + ", " +
                 std::to_string(info.ranks) + " ranks, " + data_type_name(options.dtype) + ", " +
                 info.backend + " (" + info.machine.hostname + ", " + info.timestamp + ")";
    written = write_file(options.plot_path, render_svg(text, plot_series(info.impls, results)));
  }
  return written;
}

// The sweep and its report, once hora and the implementations are up; returns the exit code.
int sweep_and_report(const Options& options, const RunInfo& info, const SetEngine& set_engine,
                     double timeout_s, std::vector<std::unique_ptr<Implementation>>& impls,
                     collectives::Communicator& control) {
  const int rank = hora::rank();
  Reporter reporter(info);
  if (rank == 0) std::cout << reporter.header() << std::flush;
  SweepSettings settings;
  settings.options = options;
  settings.rank = rank;
  settings.ranks = info.ranks;
  settings.run_in_place = !reporter.is_compare();
  settings.timeout_s = timeout_s;
  settings.set_engine = set_engine;
  // --load: busy threads beside the sweep only (hora's init and calibration ran before).
  auto load = std::make_unique<BusyLoad>(options.load_threads);
  auto results = run_sweep(settings, impls, control, [&](const std::vector<Measurement>& row) {
    const std::string line = reporter.add_row(row);
    if (rank == 0 && !line.empty()) std::cout << line << std::flush;
  });
  load.reset();
  if (!results.ok()) {
    // Every rank reports its own failure: they may differ (which peer failed).
    std::fprintf(stderr, "hora-bench: rank %d: %s\n", rank, results.status().to_string().c_str());
    control.abort();
    for (auto& impl : impls) impl.reset();
    return kExitRunError;
  }
  int code = reporter.total_wrong() > 0 ? kExitWrong : kExitOk;
  if (rank == 0) {
    std::cout << reporter.footer() << std::flush;
    Status written = write_outputs(options, info, results.value());
    if (!written.ok()) {
      print_error(written.to_string(), false);
      if (code == kExitOk) code = kExitRunError;
    }
  }
  return code;
}

// Prints the error, shuts hora down and returns `code` (the exit paths before the sweep).
int give_up(int code, const std::string& line, bool with_usage) {
  print_error(line, with_usage);
  hora::shutdown().IgnoreError();  // the run already failed: its error is the one to report
  return code;
}

int run(int argc, char** argv) {
  if (is_help(argc, argv)) {
    std::cout << help_text();
    return kExitOk;
  }
  StatusOr<Options> parsed = parse_options(argc, argv);
  Status init = hora::init();
  if (!init.ok()) {
    print_error("hora::init failed: " + init.to_string(), false);
    return kExitRunError;
  }
  const int rank = hora::rank(), ranks = hora::size();
  if (parsed.ok()) {
    Status valid = validate_for_job(parsed.value(), ranks);
    if (!valid.ok()) parsed = valid;
  }
  if (!parsed.ok()) return give_up(kExitBadArguments, parsed.status().message(), true);
  Options options = parsed.value();
  Context* context = detail::context();
  const SetEngine set_engine = engine_switch(*context);
  Status parked = set_engine(false);
  if (!parked.ok())
    return give_up(kExitRunError, "parking hora's engine: " + parked.to_string(), false);
  // --device cuda without an index: this rank's GPU, from its local rank.
  auto device = resolve_device(options.device, context->layout().local_rank);
  if (!device.ok()) return give_up(kExitRunError, device.status().to_string(), false);
  options.device = device.value();
  ImplementationEnv env;
  env.context = context;
  env.rank = rank;
  env.size = ranks;
  env.job_backend = context->communicator().backend_name();
  env.gpu = options.device.is_cuda() ? options.device.index : -1;

  // Make every implementation, then a control communicator for barriers and reductions.
  auto impls = make_implementations(options, env);
  if (!impls.ok()) {
    const bool is_usage = impls.status().code() == StatusCode::kInvalidArgument;
    return give_up(is_usage ? kExitBadArguments : kExitRunError, impls.status().to_string(),
                   is_usage);
  }
  auto control = make_control(env, *context);
  if (!control.ok())
    return give_up(kExitRunError, "control communicator: " + control.status().to_string(), false);

  const RunInfo info = run_info(options, env, *context, impls.value());
  int code = sweep_and_report(options, info, set_engine, context->config().timeout_s, impls.value(),
                              *control.value());
  // Implementations (and MPI, when one of them initialised it) go before hora shuts down.
  impls.value().clear();
  control.value().reset();
  Status down = hora::shutdown();
  if (!down.ok() && code == kExitOk) {
    print_error("hora::shutdown: " + down.to_string(), false);
    code = kExitRunError;
  }
  return code;
}

}  // namespace
}  // namespace bench
}  // namespace hora

int main(int argc, char** argv) { return hora::bench::run(argc, argv); }
