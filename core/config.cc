#include "core/config.h"

#include <cstdlib>

#include "core/base/env.h"

namespace hora {
namespace {

// A helper that applies one parser to one variable if it is set.
class Reader {
 public:
  explicit Reader(const Config::Lookup& lookup) : lookup_(lookup) {}

  std::optional<std::string> get(const char* name) const {
    const char* v = lookup_(name);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  }

 private:
  const Config::Lookup& lookup_;
};

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

constexpr std::pair<const char*, BackendKind> kBackends[] = {
    {"auto", BackendKind::kAuto}, {"builtin", BackendKind::kBuiltin},
    {"gloo", BackendKind::kGloo}, {"mpi", BackendKind::kMpi},
    {"nccl", BackendKind::kNccl}};
constexpr std::pair<const char*, AllreduceAlgo> kAlgos[] = {
    {"auto", AllreduceAlgo::kAuto}, {"ring", AllreduceAlgo::kRing},
    {"tree", AllreduceAlgo::kTree}, {"rd", AllreduceAlgo::kRecursiveDoubling},
    {"native", AllreduceAlgo::kNative}};
constexpr std::pair<const char*, CpuIsa> kIsas[] = {
    {"best", CpuIsa::kBest}, {"scalar", CpuIsa::kScalar},
    {"avx2", CpuIsa::kAvx2}, {"avx512", CpuIsa::kAvx512}};

constexpr double kMaxSeconds = 7 * 24 * 3600.0;

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

StatusOr<Config> Config::from_lookup(const Lookup& lookup) {
  Reader env(lookup);
  Config c;
  if (auto v = env.get("HORA_BACKEND")) {
    HORA_ASSIGN_OR_RETURN(c.backend, parse_choice("HORA_BACKEND", *v, kBackends));
  }
  if (auto v = env.get("HORA_SHM")) {
    HORA_ASSIGN_OR_RETURN(c.shm_enabled, parse_bool("HORA_SHM", *v));
  }
  if (auto v = env.get("HORA_FUSION_THRESHOLD")) {
    HORA_ASSIGN_OR_RETURN(c.fusion_threshold_bytes, parse_bytes("HORA_FUSION_THRESHOLD", *v));
  }
  if (auto v = env.get("HORA_CYCLE_TIME_MS")) {
    HORA_ASSIGN_OR_RETURN(c.cycle_time_ms, parse_double("HORA_CYCLE_TIME_MS", *v, 0, 10000));
  }
  if (auto v = env.get("HORA_HEARTBEAT_MS")) {
    HORA_ASSIGN_OR_RETURN(c.heartbeat_ms, parse_double("HORA_HEARTBEAT_MS", *v, 1, 600000));
  }
  if (auto v = env.get("HORA_CACHE_CAPACITY")) {
    HORA_ASSIGN_OR_RETURN(c.cache_capacity,
                          parse_int("HORA_CACHE_CAPACITY", *v, 0, int64_t{1} << 24));
  }
  if (auto v = env.get("HORA_ALLREDUCE_ALGO")) {
    HORA_ASSIGN_OR_RETURN(c.allreduce_algo, parse_choice("HORA_ALLREDUCE_ALGO", *v, kAlgos));
  }
  if (auto v = env.get("HORA_TIMELINE")) c.timeline_path = *v;
  if (auto v = env.get("HORA_STALL_WARNING_S")) {
    HORA_ASSIGN_OR_RETURN(c.stall_warning_s,
                          parse_double("HORA_STALL_WARNING_S", *v, 0.001, kMaxSeconds));
  }
  if (auto v = env.get("HORA_STALL_SHUTDOWN_S")) {
    HORA_ASSIGN_OR_RETURN(c.stall_shutdown_s,
                          parse_double("HORA_STALL_SHUTDOWN_S", *v, 0, kMaxSeconds));
  }
  if (auto v = env.get("HORA_TIMEOUT_S")) {
    HORA_ASSIGN_OR_RETURN(c.timeout_s, parse_double("HORA_TIMEOUT_S", *v, 0.001, kMaxSeconds));
  }
  if (auto v = env.get("HORA_START_TIMEOUT_S")) {
    HORA_ASSIGN_OR_RETURN(c.start_timeout_s,
                          parse_double("HORA_START_TIMEOUT_S", *v, 0.001, kMaxSeconds));
  }
  if (auto v = env.get("HORA_GLOO_IFACE")) c.gloo_iface = *v;
  if (auto v = env.get("HORA_CPU_ISA")) {
    HORA_ASSIGN_OR_RETURN(c.cpu_isa, parse_choice("HORA_CPU_ISA", *v, kIsas));
  }
  if (auto v = env.get("HORA_LOG_LEVEL")) {
    auto level = parse_log_level(*v);
    if (!level.is_ok())
      return Status::invalid_argument("HORA_LOG_LEVEL='" + *v +
                                      "' is not valid: expected one of trace, debug, info, "
                                      "warning, error");
    c.log_level = level.value();
  }
  return c;
}

StatusOr<Config> Config::from_env() {
  return from_lookup([](const char* name) -> const char* { return std::getenv(name); });
}

}  // namespace hora
