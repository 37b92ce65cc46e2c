// Config: every HORA_* setting, parsed once at init, validated, with defaults.
//
// Config::from_env() reads the process environment (read_env, core/env_source.h);
// Config::from_lookup() takes any lookup function, so tests can feed values without setenv.
// The launcher's rank layout is core/layout.h's. A Config is a plain value, passed by const
// reference after init; it is never mutated. The engine gets its part as EngineOptions
// (engine_options_from), never the Config.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "collectives/selector.h"
#include "core/engine/engine_options.h"
#include "core/env_source.h"
#include "hora/logging.h"
#include "hora/status.h"

namespace hora {

enum class BackendKind : uint8_t { kAuto = 0, kBuiltin, kGloo, kMpi, kNccl };
// HORA_ALLREDUCE_ALGO: the selector's algorithms (collectives/selector.h), as the engine takes
// them.
using AllreduceAlgo = collectives::Algorithm;
// HORA_HIERARCHICAL_ALLREDUCE / _ALLGATHER, as the engine takes them (engine_options.h).
using engine::HierarchicalMode;
enum class CpuIsa : uint8_t { kBest = 0, kScalar, kAvx2, kAvx512 };

const char* backend_kind_name(BackendKind kind);
const char* allreduce_algo_name(AllreduceAlgo algo);
const char* cpu_isa_name(CpuIsa isa);

struct Config {
  BackendKind backend = BackendKind::kAuto;             // HORA_BACKEND
  bool shm_enabled = true;                              // HORA_SHM
  int64_t fusion_threshold_bytes = int64_t{64} << 20;   // HORA_FUSION_THRESHOLD
  bool fusion_in_place = true;                          // HORA_FUSION_IN_PLACE
  bool waiters_help = true;                             // HORA_WAITERS_HELP
  double cycle_time_ms = 1.0;                           // HORA_CYCLE_TIME_MS
  double heartbeat_ms = 100.0;                          // HORA_HEARTBEAT_MS
  int64_t cache_capacity = 1024;                        // HORA_CACHE_CAPACITY
  AllreduceAlgo allreduce_algo = AllreduceAlgo::kAuto;  // HORA_ALLREDUCE_ALGO
  double calibrate_ms = 100.0;                          // HORA_CALIBRATE_MS, 0 = off
  bool autotune = true;                                 // HORA_AUTOTUNE
  int autotune_samples = 3;                             // HORA_AUTOTUNE_SAMPLES
  bool autotune_params = false;   // HORA_AUTOTUNE=1 set explicitly: the autotuner's search too
  std::string autotune_log;       // HORA_AUTOTUNE_LOG, empty = none
  std::string autotune_from;      // HORA_AUTOTUNE_FROM: the log whose best row is pinned
  int autotune_warmup_steps = 2;  // HORA_AUTOTUNE_WARMUP_STEPS: dropped after each change
  int autotune_window_steps = 2;  // HORA_AUTOTUNE_WINDOW_STEPS: steps per scored window
  int autotune_max_samples = 16;  // HORA_AUTOTUNE_MAX_SAMPLES: configurations tried
  // HORA_AUTOTUNE_FREE: knobs searched even when set ("fusion_threshold,cycle_time,cache"):
  // the value set is then where the search starts.
  std::string autotune_free;
  // Whether the user set these (environment, InitOptions or HORA_AUTOTUNE_FROM): the
  // autotuner leaves them out of its search.
  bool fusion_threshold_set = false;
  bool cycle_time_set = false;
  bool cache_set = false;
  HierarchicalMode hierarchical_allreduce = HierarchicalMode::kAuto;  // HORA_HIERARCHICAL_ALLREDUCE
  HierarchicalMode hierarchical_allgather = HierarchicalMode::kAuto;  // HORA_HIERARCHICAL_ALLGATHER
  std::string timeline_path;                                          // HORA_TIMELINE, empty = off
  double stall_warning_s = 60.0;                                      // HORA_STALL_WARNING_S
  double stall_shutdown_s = 0.0;            // HORA_STALL_SHUTDOWN_S, 0 = never
  double timeout_s = 300.0;                 // HORA_TIMEOUT_S
  double start_timeout_s = 30.0;            // HORA_START_TIMEOUT_S
  std::string gloo_iface;                   // HORA_GLOO_IFACE, empty = auto
  CpuIsa cpu_isa = CpuIsa::kBest;           // HORA_CPU_ISA
  LogLevel log_level = LogLevel::kWarning;  // HORA_LOG_LEVEL
  bool dynamic_process_sets = false;        // HORA_DYNAMIC_PROCESS_SETS

  // Returns the value of an environment variable, or nullptr when unset.
  using Lookup = EnvLookup;

  // Parses every HORA_* variable through `lookup`. The first invalid value fails with a
  // message naming the variable, the value and the accepted form; then settings that
  // contradict each other fail (HORA_ALLREDUCE_ALGO against HORA_HIERARCHICAL_ALLREDUCE,
  // HORA_HEARTBEAT_MS against HORA_TIMEOUT_S).
  static StatusOr<Config> from_lookup(const Lookup& lookup);
  // from_lookup(read_env).
  static StatusOr<Config> from_env();
};

// Whether Config reads the variable `name` (one of its HORA_* settings).
bool config_reads(const std::string& name);

// The engine's part of `config`: what its loop, controller and executors read.
engine::EngineOptions engine_options_from(const Config& config);
// HORA_BACKEND as written: "auto", "builtin", "gloo", "mpi" or "nccl".
std::string backend_name_of(const Config& config);

}  // namespace hora
