#include "core/config.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "core/base/env.h"
#include "core/engine/autotune_log.h"

namespace hora {
namespace {

// "600000", "0.5": a number as a person would write it.
std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

template <typename Enum, size_t N>
StatusOr<Enum> parse_choice(const char* var, const std::string& value,
                            const std::pair<const char*, Enum> (&choices)[N]) {
  std::string names;
  for (const auto& [name, e] : choices) {
    if (value == name) return e;
    if (!names.empty()) names += ", ";
    names += name;
  }
  return Status::invalid_argument(std::string(var) + "='" + value +
                                  "' is not valid: expected one of " + names);
}

constexpr std::pair<const char*, BackendKind> kBackends[] = {{"auto", BackendKind::kAuto},
                                                             {"builtin", BackendKind::kBuiltin},
                                                             {"gloo", BackendKind::kGloo},
                                                             {"mpi", BackendKind::kMpi},
                                                             {"nccl", BackendKind::kNccl}};
constexpr std::pair<const char*, AllreduceAlgo> kAlgos[] = {
    {"auto", AllreduceAlgo::kAuto},     {"ring", AllreduceAlgo::kRing},
    {"tree", AllreduceAlgo::kTree},     {"rd", AllreduceAlgo::kRecursiveDoubling},
    {"native", AllreduceAlgo::kNative}, {"hierarchical", AllreduceAlgo::kHierarchical}};
constexpr std::pair<const char*, CpuIsa> kIsas[] = {{"best", CpuIsa::kBest},
                                                    {"scalar", CpuIsa::kScalar},
                                                    {"avx2", CpuIsa::kAvx2},
                                                    {"avx512", CpuIsa::kAvx512}};

constexpr double kMaxSeconds = 7 * 24 * 3600.0;

// "auto", or a boolean (1/0, true/false, ...).
StatusOr<HierarchicalMode> parse_hierarchical(const char* var, const std::string& value) {
  if (value == "auto") return HierarchicalMode::kAuto;
  auto on = parse_bool(var, value);
  if (!on.ok())
    return Status::invalid_argument(std::string(var) + "='" + value +
                                    "' is not valid: expected 0, 1 or auto");
  return on.value() ? HierarchicalMode::kOn : HierarchicalMode::kOff;
}

constexpr const char* kAutotuneKnobs[] = {"fusion_threshold", "cycle_time", "cache"};

// HORA_AUTOTUNE_FREE: a comma-separated list of kAutotuneKnobs (may be empty).
Status check_autotune_free(const char* var, const std::string& value) {
  size_t start = 0;
  while (start <= value.size()) {
    const size_t end = std::min(value.find(',', start), value.size());
    const std::string knob = value.substr(start, end - start);
    bool known = knob.empty();
    for (const char* k : kAutotuneKnobs) known = known || knob == k;
    if (!known)
      return Status::invalid_argument(std::string(var) + "='" + value + "': '" + knob +
                                      "' is not a knob: expected a comma-separated list of "
                                      "fusion_threshold, cycle_time, cache");
    start = end + 1;
  }
  return Status::OK();
}

bool lists_knob(const std::string& list, const std::string& knob) {
  return ("," + list + ",").find("," + knob + ",") != std::string::npos;
}

// One HORA_* variable: its name and how a value set for it lands in a Config.
struct Setting {
  const char* name;
  Status (*apply)(const char* name, const std::string& value, Config& c);
};

// `field` = the parsed value, or the parser's error.
template <typename T, typename U>
Status assign(T& field, StatusOr<U> parsed) {
  if (!parsed.ok()) return parsed.status();
  field = static_cast<T>(std::move(parsed).value());
  return Status::OK();
}

StatusOr<LogLevel> parse_level(const char* var, const std::string& value) {
  auto level = parse_log_level(value);
  if (!level.ok())
    return Status::invalid_argument(std::string(var) + "='" + value +
                                    "' is not valid: expected one of trace, debug, info, "
                                    "warning, error");
  return level.value();
}

// Every variable Config reads, in the order it reads them: the one list (config_reads, and
// through it InitOptions, use it too).
const Setting kSettings[] = {
    {"HORA_BACKEND", [](const char* n, const std::string& v,
                        Config& c) { return assign(c.backend, parse_choice(n, v, kBackends)); }},
    {"HORA_SHM", [](const char* n, const std::string& v,
                    Config& c) { return assign(c.shm_enabled, parse_bool(n, v)); }},
    {"HORA_DYNAMIC_PROCESS_SETS",
     [](const char* n, const std::string& v, Config& c) {
       return assign(c.dynamic_process_sets, parse_bool(n, v));
     }},
    {"HORA_FUSION_THRESHOLD",
     [](const char* n, const std::string& v, Config& c) {
       c.fusion_threshold_set = true;
       return assign(c.fusion_threshold_bytes, parse_bytes(n, v));
     }},
    {"HORA_FUSION_IN_PLACE", [](const char* n, const std::string& v,
                                Config& c) { return assign(c.fusion_in_place, parse_bool(n, v)); }},
    {"HORA_WAITERS_HELP", [](const char* n, const std::string& v,
                             Config& c) { return assign(c.waiters_help, parse_bool(n, v)); }},
    {"HORA_CYCLE_TIME_MS",
     [](const char* n, const std::string& v, Config& c) {
       c.cycle_time_set = true;
       return assign(c.cycle_time_ms, parse_double(n, v, 0, 10000));
     }},
    {"HORA_HEARTBEAT_MS",
     [](const char* n, const std::string& v, Config& c) {
       return assign(c.heartbeat_ms, parse_double(n, v, 1, 600000));
     }},
    {"HORA_CACHE_CAPACITY",
     [](const char* n, const std::string& v, Config& c) {
       c.cache_set = true;
       return assign(c.cache_capacity, parse_int(n, v, 0, int64_t{1} << 24));
     }},
    {"HORA_ALLREDUCE_ALGO",
     [](const char* n, const std::string& v, Config& c) {
       return assign(c.allreduce_algo, parse_choice(n, v, kAlgos));
     }},
    {"HORA_CALIBRATE_MS",
     [](const char* n, const std::string& v, Config& c) {
       return assign(c.calibrate_ms, parse_double(n, v, 0, 60000));
     }},
    {"HORA_AUTOTUNE",
     [](const char* n, const std::string& v, Config& c) {
       HORA_RETURN_IF_ERROR(assign(c.autotune, parse_bool(n, v)));
       c.autotune_params = c.autotune;  // set explicitly to 1: the whole search
       return Status::OK();
     }},
    {"HORA_AUTOTUNE_LOG",
     [](const char*, const std::string& v, Config& c) {
       return assign(c.autotune_log, StatusOr<std::string>(v));
     }},
    {"HORA_AUTOTUNE_WARMUP_STEPS",
     [](const char* n, const std::string& v, Config& c) {
       return assign(c.autotune_warmup_steps, parse_int(n, v, 0, 1000));
     }},
    {"HORA_AUTOTUNE_WINDOW_STEPS",
     [](const char* n, const std::string& v, Config& c) {
       return assign(c.autotune_window_steps, parse_int(n, v, 1, 1000));
     }},
    {"HORA_AUTOTUNE_MAX_SAMPLES",
     [](const char* n, const std::string& v, Config& c) {
       return assign(c.autotune_max_samples, parse_int(n, v, 1, 1000));
     }},
    {"HORA_AUTOTUNE_FREE",
     [](const char* n, const std::string& v, Config& c) {
       HORA_RETURN_IF_ERROR(check_autotune_free(n, v));
       return assign(c.autotune_free, StatusOr<std::string>(v));
     }},
    {"HORA_AUTOTUNE_FROM",
     [](const char*, const std::string& v, Config& c) {
       return assign(c.autotune_from, StatusOr<std::string>(v));
     }},
    {"HORA_AUTOTUNE_SAMPLES",
     [](const char* n, const std::string& v, Config& c) {
       return assign(c.autotune_samples, parse_int(n, v, 1, 1000));
     }},
    {"HORA_HIERARCHICAL_ALLREDUCE",
     [](const char* n, const std::string& v, Config& c) {
       return assign(c.hierarchical_allreduce, parse_hierarchical(n, v));
     }},
    {"HORA_HIERARCHICAL_ALLGATHER",
     [](const char* n, const std::string& v, Config& c) {
       return assign(c.hierarchical_allgather, parse_hierarchical(n, v));
     }},
    {"HORA_TIMELINE", [](const char*, const std::string& v,
                         Config& c) { return assign(c.timeline_path, StatusOr<std::string>(v)); }},
    {"HORA_STALL_WARNING_S",
     [](const char* n, const std::string& v, Config& c) {
       return assign(c.stall_warning_s, parse_double(n, v, 0.001, kMaxSeconds));
     }},
    {"HORA_STALL_SHUTDOWN_S",
     [](const char* n, const std::string& v, Config& c) {
       return assign(c.stall_shutdown_s, parse_double(n, v, 0, kMaxSeconds));
     }},
    {"HORA_TIMEOUT_S",
     [](const char* n, const std::string& v, Config& c) {
       return assign(c.timeout_s, parse_double(n, v, 0.001, kMaxSeconds));
     }},
    {"HORA_START_TIMEOUT_S",
     [](const char* n, const std::string& v, Config& c) {
       return assign(c.start_timeout_s, parse_double(n, v, 0.001, kMaxSeconds));
     }},
    {"HORA_GLOO_IFACE", [](const char*, const std::string& v,
                           Config& c) { return assign(c.gloo_iface, StatusOr<std::string>(v)); }},
    {"HORA_CPU_ISA", [](const char* n, const std::string& v,
                        Config& c) { return assign(c.cpu_isa, parse_choice(n, v, kIsas)); }},
    {"HORA_LOG_LEVEL", [](const char* n, const std::string& v,
                          Config& c) { return assign(c.log_level, parse_level(n, v)); }},
};

// HORA_ALLREDUCE_ALGO=hierarchical means HORA_HIERARCHICAL_ALLREDUCE=1; any other fixed
// algorithm cannot be combined with it.
Status resolve_hierarchical(Config& c) {
  if (c.allreduce_algo == AllreduceAlgo::kHierarchical) {
    if (c.hierarchical_allreduce == HierarchicalMode::kOff)
      return Status::invalid_argument(
          "HORA_ALLREDUCE_ALGO=hierarchical conflicts with HORA_HIERARCHICAL_ALLREDUCE=0");
    c.hierarchical_allreduce = HierarchicalMode::kOn;
  } else if (c.hierarchical_allreduce == HierarchicalMode::kOn &&
             c.allreduce_algo != AllreduceAlgo::kAuto) {
    return Status::invalid_argument(std::string("HORA_HIERARCHICAL_ALLREDUCE=1 conflicts with "
                                                "HORA_ALLREDUCE_ALGO=") +
                                    allreduce_algo_name(c.allreduce_algo) +
                                    ": unset one (or set HORA_ALLREDUCE_ALGO=hierarchical)");
  }
  return Status::OK();
}

// An idle rank answers one negotiation round per heartbeat, and a round waits at most
// HORA_TIMEOUT_S for every rank: a heartbeat near the timeout would make idle peers look dead.
Status check_heartbeat(const Config& c) {
  if (c.heartbeat_ms * 2 > c.timeout_s * 1000)
    return Status::invalid_argument(
        "HORA_HEARTBEAT_MS=" + format_number(c.heartbeat_ms) +
        " is too long for HORA_TIMEOUT_S=" + format_number(c.timeout_s) +
        ": expected at most half the timeout (" + format_number(c.timeout_s * 500) +
        " ms), since an idle rank answers the others' rounds once per heartbeat");
  return Status::OK();
}

// HORA_AUTOTUNE_FROM: the log's best row's values, for the settings the user did not set
// (which then count as set: the autotuner leaves them alone).
Status pin_autotuned(Config& c) {
  if (c.autotune_from.empty()) return Status::OK();
  HORA_ASSIGN_OR_RETURN(engine::AutotuneRow row, engine::read_autotune_best(c.autotune_from));
  if (!c.fusion_threshold_set) c.fusion_threshold_bytes = row.values.fusion_threshold_bytes;
  if (!c.cycle_time_set) c.cycle_time_ms = row.values.cycle_time_ms;
  if (!c.cache_set) c.cache_capacity = row.values.cache_enabled ? c.cache_capacity : 0;
  c.fusion_threshold_set = c.cycle_time_set = c.cache_set = true;
  return Status::OK();
}

}  // namespace

const char* backend_kind_name(BackendKind kind) {
  for (const auto& [name, e] : kBackends)
    if (e == kind) return name;
  return "unknown";
}
const char* allreduce_algo_name(AllreduceAlgo algo) {
  for (const auto& [name, e] : kAlgos)
    if (e == algo) return name;
  return "unknown";
}
const char* cpu_isa_name(CpuIsa isa) {
  for (const auto& [name, e] : kIsas)
    if (e == isa) return name;
  return "unknown";
}

bool config_reads(const std::string& name) {
  for (const Setting& s : kSettings)
    if (name == s.name) return true;
  return false;
}

StatusOr<Config> Config::from_lookup(const Lookup& lookup) {
  Config c;
  // Each value set, in kSettings' order: the first invalid one fails.
  for (const Setting& s : kSettings) {
    const char* v = lookup(s.name);
    if (v != nullptr) HORA_RETURN_IF_ERROR(s.apply(s.name, v, c));
  }
  // Then the rules between settings.
  HORA_RETURN_IF_ERROR(resolve_hierarchical(c));
  HORA_RETURN_IF_ERROR(check_heartbeat(c));
  HORA_RETURN_IF_ERROR(pin_autotuned(c));
  // Knobs freed for the search: the value set is only where it starts.
  if (lists_knob(c.autotune_free, "fusion_threshold")) c.fusion_threshold_set = false;
  if (lists_knob(c.autotune_free, "cycle_time")) c.cycle_time_set = false;
  if (lists_knob(c.autotune_free, "cache")) c.cache_set = false;
  return c;
}

StatusOr<Config> Config::from_env() { return from_lookup(read_env); }

std::string backend_name_of(const Config& config) {
  return config.backend == BackendKind::kAuto ? "auto" : backend_kind_name(config.backend);
}

engine::EngineOptions engine_options_from(const Config& config) {
  engine::EngineOptions o;
  o.cycle_time_ms = config.cycle_time_ms;
  o.heartbeat_ms = config.heartbeat_ms;
  o.waiters_help = config.waiters_help;
  o.timeline_path = config.timeline_path;
  o.timeout_s = config.timeout_s;
  o.stall_warning_s = config.stall_warning_s;
  o.stall_shutdown_s = config.stall_shutdown_s;
  o.cache_capacity = config.cache_capacity;
  o.fusion_threshold_bytes = config.fusion_threshold_bytes;
  o.fusion_in_place = config.fusion_in_place;
  o.algorithm = config.allreduce_algo;
  o.autotune = config.autotune;
  o.autotune_samples = config.autotune_samples;
  o.autotune_params = config.autotune_params;
  o.autotune_log = config.autotune_log;
  o.autotune_warmup_steps = config.autotune_warmup_steps;
  o.autotune_window_steps = config.autotune_window_steps;
  o.autotune_max_samples = config.autotune_max_samples;
  o.fusion_threshold_set = config.fusion_threshold_set;
  o.cycle_time_set = config.cycle_time_set;
  o.cache_set = config.cache_set;
  o.hierarchical_allreduce = config.hierarchical_allreduce;
  o.hierarchical_allgather = config.hierarchical_allgather;
  return o;
}

}  // namespace hora
