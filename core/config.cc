#include "core/config.h"

#include <cstdio>
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
  if (auto v = env.get("HORA_FUSION_IN_PLACE")) {
    HORA_ASSIGN_OR_RETURN(c.fusion_in_place, parse_bool("HORA_FUSION_IN_PLACE", *v));
  }
  if (auto v = env.get("HORA_WAITERS_HELP")) {
    HORA_ASSIGN_OR_RETURN(c.waiters_help, parse_bool("HORA_WAITERS_HELP", *v));
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
  if (auto v = env.get("HORA_CALIBRATE_MS")) {
    HORA_ASSIGN_OR_RETURN(c.calibrate_ms, parse_double("HORA_CALIBRATE_MS", *v, 0, 60000));
  }
  if (auto v = env.get("HORA_AUTOTUNE")) {
    HORA_ASSIGN_OR_RETURN(c.autotune, parse_bool("HORA_AUTOTUNE", *v));
  }
  if (auto v = env.get("HORA_AUTOTUNE_SAMPLES")) {
    HORA_ASSIGN_OR_RETURN(const int64_t samples, parse_int("HORA_AUTOTUNE_SAMPLES", *v, 1, 1000));
    c.autotune_samples = static_cast<int>(samples);
  }
  if (auto v = env.get("HORA_HIERARCHICAL_ALLREDUCE")) {
    HORA_ASSIGN_OR_RETURN(c.hierarchical_allreduce,
                          parse_hierarchical("HORA_HIERARCHICAL_ALLREDUCE", *v));
  }
  if (auto v = env.get("HORA_HIERARCHICAL_ALLGATHER")) {
    HORA_ASSIGN_OR_RETURN(c.hierarchical_allgather,
                          parse_hierarchical("HORA_HIERARCHICAL_ALLGATHER", *v));
  }
  // HORA_ALLREDUCE_ALGO=hierarchical means HORA_HIERARCHICAL_ALLREDUCE=1; any other fixed
  // algorithm cannot be combined with it.
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
  // An idle rank answers one negotiation round per heartbeat, and a round waits at most
  // HORA_TIMEOUT_S for every rank: a heartbeat near the timeout would make idle peers look dead.
  if (c.heartbeat_ms * 2 > c.timeout_s * 1000)
    return Status::invalid_argument(
        "HORA_HEARTBEAT_MS=" + format_number(c.heartbeat_ms) +
        " is too long for HORA_TIMEOUT_S=" + format_number(c.timeout_s) +
        ": expected at most half the timeout (" + format_number(c.timeout_s * 500) +
        " ms), since an idle rank answers the others' rounds once per heartbeat");
  if (auto v = env.get("HORA_GLOO_IFACE")) c.gloo_iface = *v;
  if (auto v = env.get("HORA_CPU_ISA")) {
    HORA_ASSIGN_OR_RETURN(c.cpu_isa, parse_choice("HORA_CPU_ISA", *v, kIsas));
  }
  if (auto v = env.get("HORA_LOG_LEVEL")) {
    auto level = parse_log_level(*v);
    if (!level.ok())
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

// ---- rank layout -------------------------------------------------------------------------

namespace hora {
namespace {

// Reads layout variables and remembers which were set, for error messages.
class LayoutReader {
 public:
  explicit LayoutReader(const Config::Lookup& lookup) : lookup_(lookup) {}

  std::optional<std::string> get(const char* name) {
    const char* v = lookup_(name);
    if (v == nullptr) return std::nullopt;
    read_ += (read_.empty() ? "" : " ") + std::string(name) + "=" +
             (std::string(name) == "HORA_SECRET" ? "<hidden>" : v);
    return std::string(v);
  }
  bool has(const char* name) const { return lookup_(name) != nullptr; }
  const std::string& read() const { return read_; }

  Status error(const std::string& what) const {
    return Status::invalid_argument("rank layout: " + what +
                                    " (variables read: " + (read_.empty() ? "none" : read_) + ")");
  }

  // An integer variable in [min, max]; nullopt when unset.
  StatusOr<std::optional<int>> get_int(const char* name, int64_t min, int64_t max) {
    auto v = get(name);
    if (!v) return std::optional<int>();
    auto n = parse_int(name, *v, min, max);
    if (!n.ok()) return error(n.status().message());
    return std::optional<int>(static_cast<int>(n.value()));
  }
  // Both of a pair or neither: "HORA_LOCAL_RANK is set but HORA_LOCAL_SIZE is missing".
  Status get_pair(const char* index_name, const char* count_name, int* index, int* count,
                  bool required) {
    HORA_ASSIGN_OR_RETURN(auto i, get_int(index_name, 0, kMaxRanks - 1));
    HORA_ASSIGN_OR_RETURN(auto n, get_int(count_name, 1, kMaxRanks));
    if (i && !n)
      return error(std::string(index_name) + " is set but " + count_name + " is missing");
    if (n && !i)
      return error(std::string(count_name) + " is set but " + index_name + " is missing");
    if (!i && required)
      return error(std::string(index_name) + " and " + count_name + " are missing");
    if (i) {
      *index = *i;
      *count = *n;
    }
    return Status::OK();
  }

 private:
  const Config::Lookup& lookup_;
  std::string read_;
};

// "2(x3),1" -> the entry for node `node`: Slurm's compressed tasks-per-node list.
std::optional<int> slurm_tasks_on_node(const std::string& list, int node) {
  int index = 0;
  size_t pos = 0;
  while (pos < list.size()) {
    size_t end = list.find(',', pos);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(pos, end - pos);
    int tasks = 0, repeat = 1;
    if (std::sscanf(item.c_str(), "%d(x%d)", &tasks, &repeat) < 1 || tasks < 1 || repeat < 1)
      return std::nullopt;
    if (node < index + repeat) return tasks;
    index += repeat;
    pos = end + 1;
  }
  return std::nullopt;
}

// Sources 2-4 have no launcher-hosted store: rank 0 hosts one at HORA_RENDEZVOUS_ADDR:PORT,
// else MASTER_ADDR:MASTER_PORT.
Status read_self_hosted_store(LayoutReader& env, RankLayout& l) {
  auto addr = env.get("HORA_RENDEZVOUS_ADDR");
  HORA_ASSIGN_OR_RETURN(auto port, env.get_int("HORA_RENDEZVOUS_PORT", 1, 65535));
  if (addr.has_value() != port.has_value())
    return env.error("HORA_RENDEZVOUS_ADDR and HORA_RENDEZVOUS_PORT must be set together");
  if (!addr) {
    addr = env.get("MASTER_ADDR");
    HORA_ASSIGN_OR_RETURN(port, env.get_int("MASTER_PORT", 1, 65535));
    if (addr.has_value() != port.has_value())
      return env.error("MASTER_ADDR and MASTER_PORT must be set together");
    // torchrun's agent already serves its own store on MASTER_PORT.
    if (port && l.source == LayoutSource::kTorchrun && env.has("TORCHELASTIC_USE_AGENT_STORE")) {
      if (*port == 65535) return env.error("MASTER_PORT=65535 leaves no port for hora's store");
      port = *port + 1;
    }
  }
  if (!addr) return Status::OK();  // no store: fine for size 1 and store-less backends
  l.store_addr = *addr;
  l.store_port = *port;
  l.hosts_store = l.rank == 0;
  if (auto secret = env.get("HORA_SECRET")) {
    l.secret = *secret;
  } else {
    // Documented fallback: every rank derives the same secret from what they all share.
    // It keeps strangers who do not know the job's address out by accident, not by design:
    // set HORA_SECRET for a real secret.
    const char* run_id = nullptr;
    if (l.source == LayoutSource::kTorchrun) run_id = "TORCHELASTIC_RUN_ID";
    if (l.source == LayoutSource::kSlurm) run_id = "SLURM_JOB_ID";
    if (l.source == LayoutSource::kMpirun) run_id = "OMPI_MCA_ess_base_jobid";
    std::optional<std::string> id = run_id ? env.get(run_id) : std::nullopt;
    l.secret = "hora-fallback:" + std::string(layout_source_name(l.source)) + ":" +
               id.value_or("") + ":" + l.store_addr + ":" + std::to_string(l.store_port);
    l.secret_is_fallback = true;
  }
  return Status::OK();
}

StatusOr<RankLayout> read_horarun(LayoutReader& env) {
  RankLayout l;
  l.source = LayoutSource::kHorarun;
  HORA_RETURN_IF_ERROR(env.get_pair("HORA_RANK", "HORA_SIZE", &l.rank, &l.size, true));
  l.local_rank = l.rank;
  l.local_size = l.size;
  HORA_RETURN_IF_ERROR(
      env.get_pair("HORA_LOCAL_RANK", "HORA_LOCAL_SIZE", &l.local_rank, &l.local_size, false));
  HORA_RETURN_IF_ERROR(
      env.get_pair("HORA_CROSS_RANK", "HORA_CROSS_SIZE", &l.cross_rank, &l.cross_size, false));
  if (auto host = env.get("HORA_HOSTNAME")) l.hostname = *host;
  auto addr = env.get("HORA_RENDEZVOUS_ADDR");
  HORA_ASSIGN_OR_RETURN(auto port, env.get_int("HORA_RENDEZVOUS_PORT", 1, 65535));
  auto secret = env.get("HORA_SECRET");
  if (addr || port || secret) {
    if (!addr || !port || !secret)
      return env.error(
          "HORA_RENDEZVOUS_ADDR, HORA_RENDEZVOUS_PORT and HORA_SECRET must be set together");
    l.store_addr = *addr;
    l.store_port = *port;
    l.secret = *secret;
  } else if (l.size > 1) {
    return env.error("HORA_SIZE=" + std::to_string(l.size) +
                     " but HORA_RENDEZVOUS_ADDR, HORA_RENDEZVOUS_PORT and HORA_SECRET are "
                     "missing (horarun sets them)");
  }
  // Another launcher's variables must agree with horarun's when both are present.
  HORA_ASSIGN_OR_RETURN(auto ompi_rank, env.get_int("OMPI_COMM_WORLD_RANK", 0, kMaxRanks - 1));
  HORA_ASSIGN_OR_RETURN(auto ompi_size, env.get_int("OMPI_COMM_WORLD_SIZE", 1, kMaxRanks));
  if ((ompi_rank && *ompi_rank != l.rank) || (ompi_size && *ompi_size != l.size))
    return env.error("HORA_RANK/HORA_SIZE (" + std::to_string(l.rank) + "/" +
                     std::to_string(l.size) + ") disagree with OMPI_COMM_WORLD_RANK/SIZE (" +
                     (ompi_rank ? std::to_string(*ompi_rank) : "unset") + "/" +
                     (ompi_size ? std::to_string(*ompi_size) : "unset") +
                     "): run under one launcher, or use `horarun --mpi`");
  return l;
}

StatusOr<RankLayout> read_mpirun(LayoutReader& env) {
  RankLayout l;
  l.source = LayoutSource::kMpirun;
  HORA_RETURN_IF_ERROR(
      env.get_pair("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", &l.rank, &l.size, true));
  l.local_rank = l.rank;
  l.local_size = l.size;
  HORA_RETURN_IF_ERROR(env.get_pair("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
                                    &l.local_rank, &l.local_size, false));
  // Open MPI exports no host index: with its default block mapping (--map-by slot) and the
  // same number of ranks per host, host k holds ranks [k*local_size, (k+1)*local_size).
  if (l.size % l.local_size == 0) {
    l.cross_size = l.size / l.local_size;
    l.cross_rank = l.rank / l.local_size;
  }
  HORA_RETURN_IF_ERROR(read_self_hosted_store(env, l));
  return l;
}

StatusOr<RankLayout> read_slurm(LayoutReader& env) {
  RankLayout l;
  l.source = LayoutSource::kSlurm;
  HORA_RETURN_IF_ERROR(env.get_pair("SLURM_PROCID", "SLURM_NTASKS", &l.rank, &l.size, true));
  l.local_rank = l.rank;
  l.local_size = l.size;
  HORA_ASSIGN_OR_RETURN(auto local_id, env.get_int("SLURM_LOCALID", 0, 1 << 20));
  HORA_ASSIGN_OR_RETURN(auto node_id, env.get_int("SLURM_NODEID", 0, 1 << 20));
  HORA_ASSIGN_OR_RETURN(auto nnodes, env.get_int("SLURM_NNODES", 1, 1 << 20));
  if (local_id) {
    l.local_rank = *local_id;
    std::optional<int> local_size;
    if (auto list = env.get("SLURM_TASKS_PER_NODE")) {
      local_size = slurm_tasks_on_node(*list, node_id.value_or(0));
      if (!local_size)
        return env.error("SLURM_TASKS_PER_NODE='" + *list + "' has no entry for node " +
                         std::to_string(node_id.value_or(0)));
    } else if (auto per_node = env.get("SLURM_NTASKS_PER_NODE")) {
      auto n = parse_int("SLURM_NTASKS_PER_NODE", *per_node, 1, 1 << 20);
      if (!n.ok()) return env.error(n.status().message());
      local_size = static_cast<int>(n.value());
    } else {
      return env.error(
          "SLURM_LOCALID is set but neither SLURM_TASKS_PER_NODE nor SLURM_NTASKS_PER_NODE");
    }
    l.local_size = *local_size;
  }
  if (node_id || nnodes) {
    if (!node_id || !nnodes) return env.error("SLURM_NODEID and SLURM_NNODES must be set together");
    l.cross_rank = *node_id;
    l.cross_size = *nnodes;
  }
  HORA_RETURN_IF_ERROR(read_self_hosted_store(env, l));
  return l;
}

StatusOr<RankLayout> read_torchrun(LayoutReader& env) {
  RankLayout l;
  l.source = LayoutSource::kTorchrun;
  HORA_RETURN_IF_ERROR(env.get_pair("RANK", "WORLD_SIZE", &l.rank, &l.size, true));
  l.local_rank = l.rank;
  l.local_size = l.size;
  HORA_RETURN_IF_ERROR(
      env.get_pair("LOCAL_RANK", "LOCAL_WORLD_SIZE", &l.local_rank, &l.local_size, false));
  if (env.has("GROUP_RANK") || env.has("GROUP_WORLD_SIZE")) {
    HORA_RETURN_IF_ERROR(
        env.get_pair("GROUP_RANK", "GROUP_WORLD_SIZE", &l.cross_rank, &l.cross_size, true));
  } else if (l.size % l.local_size == 0) {
    l.cross_size = l.size / l.local_size;
    l.cross_rank = l.rank / l.local_size;
  }
  HORA_RETURN_IF_ERROR(read_self_hosted_store(env, l));
  if (l.size > 1 && !l.has_store())
    return env.error("WORLD_SIZE=" + std::to_string(l.size) +
                     " but MASTER_ADDR and MASTER_PORT are missing");
  return l;
}

}  // namespace

StatusOr<RankLayout> read_rank_layout(const Config::Lookup& lookup) {
  LayoutReader env(lookup);
  StatusOr<RankLayout> layout = RankLayout();
  if (env.has("HORA_RANK") || env.has("HORA_SIZE")) {
    layout = read_horarun(env);
  } else if (env.has("OMPI_COMM_WORLD_RANK") || env.has("OMPI_COMM_WORLD_SIZE")) {
    layout = read_mpirun(env);
  } else if (env.has("SLURM_PROCID") && env.has("SLURM_NTASKS")) {
    // SLURM_PROCID alone is set in batch scripts too; a task of `srun` has both.
    layout = read_slurm(env);
  } else if (env.has("RANK") || env.has("WORLD_SIZE")) {
    layout = read_torchrun(env);
  }
  if (!layout.ok()) return layout.status();
  RankLayout l = std::move(layout).value();
  l.variables_read = env.read();
  HORA_RETURN_IF_ERROR(validate_layout(l));
  return l;
}

StatusOr<RankLayout> read_rank_layout_from_env() {
  return read_rank_layout([](const char* name) -> const char* { return std::getenv(name); });
}

}  // namespace hora
