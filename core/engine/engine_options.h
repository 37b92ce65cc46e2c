// EngineOptions: everything the engine (its loop, controller, executors, fusion planner, stall
// inspector, timeline and algorithm tuner) reads of the job's settings, as plain values.
//
// The runtime builds it from its Config (engine_options_from, core/config.h); the engine never
// sees the Config, the environment or the launcher's layout. The defaults are Config's, so a
// default EngineOptions is an engine as an unconfigured job runs it. A plain value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/selector.h"

namespace hora {
namespace engine {

// HORA_HIERARCHICAL_ALLREDUCE / _ALLGATHER: 0 never, 1 whenever the job spans hosts, auto
// (the default) when the cost model (allreduce) or the measured links (allgather) say so.
enum class HierarchicalMode : uint8_t { kOff = 0, kOn, kAuto };

struct EngineOptions {
  // The loop (engine.h): the burst window, the idle round, helping waiters.
  double cycle_time_ms = 1.0;   // HORA_CYCLE_TIME_MS
  double heartbeat_ms = 100.0;  // HORA_HEARTBEAT_MS
  bool waiters_help = true;     // HORA_WAITERS_HELP
  std::string timeline_path;    // HORA_TIMELINE, empty = off (rank 0 writes it)
  // The controller: deadlines, the stall inspector and the response cache.
  double timeout_s = 300.0;       // HORA_TIMEOUT_S
  double stall_warning_s = 60.0;  // HORA_STALL_WARNING_S
  double stall_shutdown_s = 0.0;  // HORA_STALL_SHUTDOWN_S, 0 = never
  int64_t cache_capacity = 1024;  // HORA_CACHE_CAPACITY
  // The executors: fusion, the allreduce algorithm and its tuner, hierarchical collectives.
  int64_t fusion_threshold_bytes = int64_t{64} << 20;                // HORA_FUSION_THRESHOLD
  bool fusion_in_place = true;                                       // HORA_FUSION_IN_PLACE
  collectives::Algorithm algorithm = collectives::Algorithm::kAuto;  // HORA_ALLREDUCE_ALGO
  bool autotune = true;                                              // HORA_AUTOTUNE
  int autotune_samples = 3;                                          // HORA_AUTOTUNE_SAMPLES
  // HORA_AUTOTUNE=1 set explicitly: the autotuner (autotuner.h) also searches the fusion
  // threshold, the cycle time and the response cache from the job's steps, leaving out those
  // the user set (HORA_FUSION_THRESHOLD, HORA_CYCLE_TIME_MS, HORA_CACHE_CAPACITY, in the
  // environment or InitOptions, or pinned by HORA_AUTOTUNE_FROM).
  bool autotune_params = false;
  std::string autotune_log;       // HORA_AUTOTUNE_LOG, empty = none (rank 0 writes it)
  int autotune_warmup_steps = 2;  // HORA_AUTOTUNE_WARMUP_STEPS
  int autotune_window_steps = 2;  // HORA_AUTOTUNE_WINDOW_STEPS
  int autotune_max_samples = 16;  // HORA_AUTOTUNE_MAX_SAMPLES
  bool fusion_threshold_set = false;
  bool cycle_time_set = false;
  bool cache_set = false;
  HierarchicalMode hierarchical_allreduce = HierarchicalMode::kAuto;
  HierarchicalMode hierarchical_allgather = HierarchicalMode::kAuto;
  // Benchmarks only (device_engine_bench): the device path with the engine's thread waiting
  // for each device bucket, as before the finalizer (DeviceExecutorOptions::host_waits).
  bool device_host_waits = false;
  // A process set's engine: the job's global ranks of its communicator's ranks, under which
  // the failure board looks up ranks known failed (collectives/failed_ranks.h); empty: the
  // job's own engine.
  std::vector<int> members;
};

}  // namespace engine
}  // namespace hora
