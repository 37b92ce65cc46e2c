// What machine a run was measured on, for headers, JSON and the README: host name, online
// processors and the CPU model (from /proc/cpuinfo). Thread-safe.
#pragma once

#include <string>

namespace hora {
namespace bench {

struct MachineInfo {
  std::string hostname;
  int cpus = 0;
  std::string cpu_model;  // "unknown" when /proc/cpuinfo has no "model name"
};

MachineInfo machine_info();
// UTC now, ISO 8601: "2026-12-02T14:05:00Z".
std::string utc_timestamp();

}  // namespace bench
}  // namespace hora
