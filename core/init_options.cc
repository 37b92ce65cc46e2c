#include "core/init_options.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <string>

namespace hora {
namespace {

// Every variable Config and the rank layout read (core/config.cc, core/layout.h).
const char* const kKnown[] = {
    "HORA_ALLREDUCE_ALGO",
    "HORA_BACKEND",
    "HORA_CACHE_CAPACITY",
    "HORA_CALIBRATE_MS",
    "HORA_CPU_ISA",
    "HORA_CROSS_RANK",
    "HORA_CROSS_SIZE",
    "HORA_CYCLE_TIME_MS",
    "HORA_FUSION_IN_PLACE",
    "HORA_FUSION_THRESHOLD",
    "HORA_GLOO_IFACE",
    "HORA_HEARTBEAT_MS",
    "HORA_HOSTNAME",
    "HORA_LOCAL_RANK",
    "HORA_LOCAL_SIZE",
    "HORA_LOG_LEVEL",
    "HORA_RANK",
    "HORA_RENDEZVOUS_ADDR",
    "HORA_RENDEZVOUS_PORT",
    "HORA_SECRET",
    "HORA_SHM",
    "HORA_SIZE",
    "HORA_STALL_SHUTDOWN_S",
    "HORA_STALL_WARNING_S",
    "HORA_START_TIMEOUT_S",
    "HORA_TIMELINE",
    "HORA_TIMEOUT_S",
    "HORA_WAITERS_HELP",
};

bool known(const std::string& name) {
  for (const char* k : kKnown)
    if (name == k) return true;
  return false;
}

}  // namespace

StatusOr<Config::Lookup> make_lookup(const InitOptions& options) {
  auto settings = std::make_shared<std::map<std::string, std::string>>();
  for (const auto& kv : options.settings) {
    if (!known(kv.first))
      return Status::invalid_argument("hora::InitOptions setting '" + kv.first +
                                      "' is not a variable hora reads (expected one of the "
                                      "HORA_* variables listed in docs/architecture.md)");
    (*settings)[kv.first] = kv.second;
  }
  return Config::Lookup([settings](const char* name) -> const char* {
    auto it = settings->find(name);
    if (it != settings->end()) return it->second.c_str();
    return std::getenv(name);
  });
}

}  // namespace hora
