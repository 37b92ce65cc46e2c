// Command-line parsing and validation with CLI11 (see options.h).
#include "benchmarks/hora_bench/options.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <sstream>

#include "benchmarks/hora_bench/size_parse.h"

namespace hora {
namespace bench {
namespace {

// The flag values as text, before conversion (so every message names the flag and value).
struct RawFlags {
  std::string collective, min_bytes = "32M", max_bytes = "32M", dtype = "float32", op = "sum";
  std::string algo = "auto", backend, compare, json, csv, plot, device = "cpu";
  double step_factor = 0;
  double min_ms = 0;
  std::string step_bytes;
  int root = 0, iters = 20, warmup = 5, check = 1, load = 0, rounds = 1;
  bool through_engine = false;
};

void add_flags(CLI::App& app, RawFlags& f) {
  app.add_option("collective", f.collective,
                 "allreduce, allgather, broadcast, reducescatter or alltoall")
      ->required();
  app.add_option("-b,--minbytes", f.min_bytes, "smallest size (K/M/G suffixes), default 32M");
  app.add_option("-e,--maxbytes", f.max_bytes, "largest size, default 32M");
  app.add_option("-f,--stepfactor", f.step_factor, "multiply the size by this per step (2)");
  app.add_option("-i,--stepbytes", f.step_bytes, "add this many bytes per step instead");
  app.add_option("-d,--datatype", f.dtype,
                 "float32 (float), float16 (half), bfloat16, float64, "
                 "int8, uint8, int16, uint16, int32, int64, bool (reductions: min, max, prod)");
  app.add_option("-o,--op", f.op, "sum, prod, min, max, avg (reductions only)");
  app.add_option("-r,--root", f.root, "root rank of broadcast (0)");
  app.add_option("-n,--iters", f.iters, "timed iterations per size (20)");
  app.add_option("-w,--warmup_iters", f.warmup, "untimed iterations per size (5)");
  app.add_option("--rounds", f.rounds,
                 "time every implementation this many times in turn per size, -n iterations "
                 "each, statistics over all (1); evens out a noisy machine's drift");
  app.add_option("--min-ms", f.min_ms,
                 "time each implementation at least this many ms per size and round: more "
                 "than -n iterations where a call is short (0: exactly -n)");
  app.add_option("-c,--check", f.check, "check results against the closed form: 0 or 1 (1)");
  app.add_option("--algo", f.algo, "hora's allreduce algorithm: auto, ring, tree, rd, native");
  app.add_option("--backend", f.backend,
                 "backend of hora's algorithms: builtin, gloo, mpi, nccl "
                 "(default: the job's HORA_BACKEND; nccl with --device cuda)");
  app.add_option("--device", f.device,
                 "where the buffers live: cpu (default), cuda (each rank's GPU: local rank "
                 "modulo the GPUs) or cuda:N");
  app.add_option("--load", f.load,
                 "busy compute threads per rank beside the sweep (0: none), as training keeps "
                 "its cores busy");
  app.add_flag("--through-engine", f.through_engine,
               "named async allreduces through the engine (fusion included)");
  app.add_option("--compare", f.compare,
                 "also run these, comma-separated, beside hora through each "
                 "of its algorithms: hora (only those), gloo, mpi, wire (the "
                 "ring's bytes with no reduction: the transport's ceiling), nccl "
                 "(NCCL's own collectives, with --device cuda)");
  app.add_option("--json", f.json, "write every measurement as JSON");
  app.add_option("--csv", f.csv, "write every measurement as CSV");
  app.add_option("--plot", f.plot, "write busbw against size as an SVG plot");
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// --device: "cpu", "cuda" (this rank's GPU, chosen from its local rank: index -1) or "cuda:N".
StatusOr<Device> parse_bench_device(const std::string& text) {
  if (text == "cuda") return Device::cuda(-1);
  auto device = parse_device(text);
  if (!device.ok()) return Status::invalid_argument("--device: " + device.status().message());
  return device.value();
}

// -b, -e, -i, -f: the sizes swept.
Status convert_sizes(const RawFlags& f, bool factor_given, Options& o) {
  HORA_ASSIGN_OR_RETURN(o.min_bytes, parse_size(f.min_bytes, "-b"));
  HORA_ASSIGN_OR_RETURN(o.max_bytes, parse_size(f.max_bytes, "-e"));
  if (o.min_bytes > o.max_bytes) {
    return Status::invalid_argument("-b " + f.min_bytes + " is larger than -e " + f.max_bytes +
                                    ": the smallest size must not exceed the largest");
  }
  if (!f.step_bytes.empty()) {
    if (factor_given) return Status::invalid_argument("-f and -i exclude each other: give one");
    HORA_ASSIGN_OR_RETURN(o.step_bytes, parse_size(f.step_bytes, "-i"));
    if (o.step_bytes == 0) return Status::invalid_argument("-i 0: the step must be positive");
  }
  if (factor_given) {
    if (!(f.step_factor > 1.0) || !std::isfinite(f.step_factor)) {
      return Status::invalid_argument("-f " + std::to_string(f.step_factor) +
                                      ": the step factor must be greater than 1");
    }
    o.step_factor = f.step_factor;
  }
  return Status::OK();
}

// -d and -o, and whether the collective takes them.
Status convert_reduction(const RawFlags& f, bool op_given, Options& o) {
  std::string dtype = f.dtype;
  auto dt = parse_data_type(dtype);
  if (!dt.ok()) return Status::invalid_argument("-d: " + dt.status().message());
  o.dtype = dt.value();
  o.op_given = op_given;
  const std::string op_text = f.op == "prod" ? "product" : f.op;
  auto op = parse_reduce_op(op_text);
  if (!op.ok()) return Status::invalid_argument("-o: " + op.status().message());
  o.op = op.value();
  if (o.op == ReduceOp::kAdasum) {
    return Status::invalid_argument(
        "-o adasum: hora-bench compares elementwise reductions across implementations; "
        "benchmarks/adasum_bench measures Adasum against Sum");
  }
  if (op_given && !is_reduction(o.collective)) {
    return Status::invalid_argument(std::string("-o ") + f.op + " is not valid for " +
                                    collective_name(o.collective) +
                                    ", which reduces nothing (only allreduce and reducescatter "
                                    "take -o)");
  }
  if (is_reduction(o.collective) && !is_reduce_op_defined(o.op, o.dtype)) {
    return Status::invalid_argument("-d " + std::string(data_type_name(o.dtype)) + " with -o " +
                                    f.op + ": " + collective_name(o.collective) +
                                    " of bool takes -o min, max or prod (logical and / or)");
  }
  if (o.op == ReduceOp::kAverage && !is_floating(o.dtype)) {
    return Status::invalid_argument(std::string("-o avg needs a floating dtype, not -d ") +
                                    data_type_name(o.dtype));
  }
  return Status::OK();
}

// -r, -n, -w, --rounds, --min-ms, -c.
Status convert_repetition(const RawFlags& f, Options& o) {
  if (f.root < 0) {
    return Status::invalid_argument("-r " + std::to_string(f.root) + ": the root must be >= 0");
  }
  o.root = f.root;
  if (f.iters < 1) {
    return Status::invalid_argument("-n " + std::to_string(f.iters) +
                                    ": needs at least 1 iteration");
  }
  if (f.warmup < 0) {
    return Status::invalid_argument("-w " + std::to_string(f.warmup) + ": must be >= 0");
  }
  if (f.rounds < 1) {
    return Status::invalid_argument("--rounds " + std::to_string(f.rounds) +
                                    ": needs at least 1 round");
  }
  o.rounds = f.rounds;
  if (!(f.min_ms >= 0 && f.min_ms <= 60000)) {
    std::ostringstream ms;
    ms << f.min_ms;
    return Status::invalid_argument("--min-ms " + ms.str() +
                                    ": expected 0 (exactly -n) to 60000 milliseconds");
  }
  o.min_ms = f.min_ms;
  if (f.check != 0 && f.check != 1) {
    return Status::invalid_argument("-c " + std::to_string(f.check) + ": expected 0 or 1");
  }
  o.iters = f.iters;
  o.warmup = f.warmup;
  o.check = f.check == 1;
  return Status::OK();
}

// --algo, --device, --backend, --through-engine, --load: what runs the collective and
// beside what.
Status convert_placement(const RawFlags& f, Options& o) {
  auto algo = collectives::parse_algorithm(f.algo);
  if (!algo.ok()) {
    return Status::invalid_argument("--algo '" + f.algo +
                                    "': expected auto, ring, tree, rd or native");
  }
  o.algo = algo.value();
  if (o.algo != collectives::Algorithm::kAuto && o.collective != Collective::kAllreduce) {
    return Status::invalid_argument(std::string("--algo ") + f.algo +
                                    " applies to allreduce only, "
                                    "not " +
                                    collective_name(o.collective));
  }
  HORA_ASSIGN_OR_RETURN(o.device, parse_bench_device(f.device));
  const bool gpu = o.device.is_cuda();
  if (!f.backend.empty() && f.backend != "builtin" && f.backend != "gloo" && f.backend != "mpi" &&
      !(gpu && f.backend == "nccl")) {
    return Status::invalid_argument("--backend '" + f.backend + "': expected builtin, gloo or mpi" +
                                    (gpu ? ", or nccl" : " (nccl with --device cuda)"));
  }
  if (gpu && !f.backend.empty() && f.backend != "nccl") {
    return Status::invalid_argument("--backend " + f.backend + " with --device " + f.device +
                                    ": GPU buffers go through nccl only");
  }
  o.backend = gpu ? "nccl" : f.backend;
  o.through_engine = f.through_engine;
  if (f.load < 0 || f.load > 64) {
    return Status::invalid_argument("--load " + std::to_string(f.load) +
                                    ": expected 0 to 64 busy threads per rank");
  }
  o.load_threads = f.load;
  if (o.through_engine && o.collective != Collective::kAllreduce) {
    return Status::invalid_argument(
        std::string("--through-engine applies to allreduce only, not ") +
        collective_name(o.collective));
  }
  return Status::OK();
}

// --compare: the baselines beside hora.
Status convert_compare(const RawFlags& f, Options& o) {
  const bool gpu = o.device.is_cuda();
  for (const std::string& name : split_commas(f.compare)) {
    if (name != "hora" && name != "gloo" && name != "mpi" && name != "wire" && name != "nccl") {
      return Status::invalid_argument("--compare '" + name +
                                      "': expected hora, gloo, mpi, wire or nccl");
    }
    if (name == "nccl" && !gpu) {
      return Status::invalid_argument("--compare nccl needs --device cuda: NCCL moves GPU buffers");
    }
    if (gpu && name != "hora" && name != "nccl") {
      return Status::invalid_argument("--compare " + name + " with --device " + f.device +
                                      ": on the GPU only hora and nccl compare");
    }
    if (name == "wire" && o.collective != Collective::kAllreduce) {
      return Status::invalid_argument(
          std::string("--compare wire applies to allreduce only, not ") +
          collective_name(o.collective));
    }
    o.compare.push_back(name);
  }
  return Status::OK();
}

// --json, --csv, --plot.
Status convert_outputs(const RawFlags& f, Options& o) {
  o.json_path = f.json;
  o.csv_path = f.csv;
  o.plot_path = f.plot;
  if (!o.plot_path.empty() && !ends_with(o.plot_path, ".svg")) {
    return Status::invalid_argument("--plot '" + o.plot_path + "': the file name must end in .svg");
  }
  return Status::OK();
}

// The flags, checked, as Options. The groups check in this order, and each in its flags'
// order, so the first error is the same as flag by flag.
StatusOr<Options> convert(const RawFlags& f, bool op_given, bool factor_given) {
  Options o;
  HORA_ASSIGN_OR_RETURN(o.collective, parse_collective(f.collective));
  Status s = convert_sizes(f, factor_given, o);
  if (s.ok()) s = convert_reduction(f, op_given, o);
  if (s.ok()) s = convert_repetition(f, o);
  if (s.ok()) s = convert_placement(f, o);
  if (s.ok()) s = convert_compare(f, o);
  if (s.ok()) s = convert_outputs(f, o);
  if (!s.ok()) return s;
  return o;
}

// CLI11's message as one line.
std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n') c = ' ';
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

}  // namespace

StatusOr<Options> parse_options(const std::vector<std::string>& args) {
  CLI::App app("hora-bench: collective bandwidth and latency", "hora-bench");
  RawFlags flags;
  add_flags(app, flags);
  // CLI11 parses a reversed vector of arguments.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return Status::failed_precondition("help");
  } catch (const CLI::ParseError& e) {
    return Status::invalid_argument(one_line(e.what()));
  }
  return convert(flags, app.count("-o") > 0, app.count("-f") > 0);
}

StatusOr<Options> parse_options(int argc, const char* const* argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return parse_options(args);
}

Status validate_for_job(const Options& options, int ranks) {
  if (has_root(options.collective) && options.root >= ranks) {
    return Status::invalid_argument("-r " + std::to_string(options.root) +
                                    ": the root must be a "
                                    "rank of the job, 0.." +
                                    std::to_string(ranks - 1));
  }
  return Status::OK();
}

std::vector<size_t> sweep_sizes(const Options& options) {
  std::vector<size_t> sizes;
  size_t size = options.min_bytes;
  while (true) {
    sizes.push_back(size);
    size_t next = options.step_bytes != 0
                      ? size + options.step_bytes
                      : static_cast<size_t>(static_cast<double>(size) * options.step_factor);
    if (next <= size) next = size + 1;  // -b 0 or a factor that rounds back
    if (next > options.max_bytes || next < size) break;
    size = next;
  }
  return sizes;
}

std::string usage_hint() { return "usage: hora-bench COLLECTIVE [flags]; see hora-bench --help"; }

std::string help_text() {
  CLI::App app("hora-bench: collective bandwidth and latency", "hora-bench");
  RawFlags flags;
  add_flags(app, flags);
  return app.help();
}

}  // namespace bench
}  // namespace hora
