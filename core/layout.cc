#include "core/layout.h"

#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "core/base/env.h"

namespace hora {

const char* layout_source_name(LayoutSource source) {
  switch (source) {
    case LayoutSource::kSingle: return "single process";
    case LayoutSource::kHorarun: return "horarun";
    case LayoutSource::kMpirun: return "mpirun";
    case LayoutSource::kSlurm: return "slurm";
    case LayoutSource::kTorchrun: return "torchrun";
  }
  return "unknown";
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

Status validate_layout(const RankLayout& l) {
  auto bad = [&](const std::string& what) {
    return Status::invalid_argument(
        std::string("rank layout from ") + layout_source_name(l.source) + " is invalid: " + what +
        " (variables read: " + (l.variables_read.empty() ? "none" : l.variables_read) + ")");
  };
  if (l.size < 1) return bad("size " + std::to_string(l.size) + " < 1");
  if (l.size > kMaxRanks)
    return bad("size " + std::to_string(l.size) + " exceeds hora's limit of " +
               std::to_string(kMaxRanks) + " ranks");
  // Each index and count against its range, in this order: the first one outside fails.
  struct Range {
    const char* what;
    int value;
    int lo;
    const char* bound_name;
    int bound;
    bool bound_included;  // [lo, bound] rather than [lo, bound)
  };
  const Range ranges[] = {
      {"rank", l.rank, 0, "size", l.size, false},
      {"local size", l.local_size, 1, "size", l.size, true},
      {"local rank", l.local_rank, 0, "local size", l.local_size, false},
      {"cross size", l.cross_size, 1, "size", l.size, true},
      {"cross rank", l.cross_rank, 0, "cross size", l.cross_size, false},
  };
  for (const Range& c : ranges) {
    const bool above = c.bound_included ? c.value > c.bound : c.value >= c.bound;
    if (c.value < c.lo || above)
      return bad(std::string(c.what) + " " + std::to_string(c.value) + " is not in [" +
                 std::to_string(c.lo) + ", " + c.bound_name + " " + std::to_string(c.bound) +
                 (c.bound_included ? "]" : ")"));
  }
  if (l.has_store() && (l.store_port < 1 || l.store_port > 65535))
    return bad("store port " + std::to_string(l.store_port) + " is not in [1, 65535]");
  if (l.has_store() && l.secret.empty()) return bad("a store address is set but no secret");
  return Status::OK();
}

namespace {

// Reads layout variables and remembers which were set, for error messages.
class LayoutReader {
 public:
  explicit LayoutReader(const EnvLookup& lookup) : lookup_(lookup) {}

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
  const EnvLookup& lookup_;
  std::string read_;
};

// A layout of `source` with rank and size from the pair (rank_name, size_name), required;
// local rank and size equal them until a reader finds the host's.
StatusOr<RankLayout> begin_layout(LayoutReader& env, LayoutSource source, const char* rank_name,
                                  const char* size_name) {
  RankLayout l;
  l.source = source;
  HORA_RETURN_IF_ERROR(env.get_pair(rank_name, size_name, &l.rank, &l.size, true));
  l.local_rank = l.rank;
  l.local_size = l.size;
  return l;
}

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

// horarun's hostname and store (HORA_HOSTNAME, HORA_RENDEZVOUS_ADDR/PORT, HORA_SECRET): the
// store's three together or none; `missing` is the error's start when none is set but the job
// needs a store (empty: none needed).
Status read_horarun_store(LayoutReader& env, RankLayout& l, const std::string& missing) {
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
  } else if (!missing.empty()) {
    return env.error(missing +
                     " but HORA_RENDEZVOUS_ADDR, HORA_RENDEZVOUS_PORT and HORA_SECRET are "
                     "missing (horarun sets them)");
  }
  return Status::OK();
}

StatusOr<RankLayout> read_horarun(LayoutReader& env) {
  HORA_ASSIGN_OR_RETURN(RankLayout l,
                        begin_layout(env, LayoutSource::kHorarun, "HORA_RANK", "HORA_SIZE"));
  HORA_RETURN_IF_ERROR(
      env.get_pair("HORA_LOCAL_RANK", "HORA_LOCAL_SIZE", &l.local_rank, &l.local_size, false));
  HORA_RETURN_IF_ERROR(
      env.get_pair("HORA_CROSS_RANK", "HORA_CROSS_SIZE", &l.cross_rank, &l.cross_size, false));
  HORA_RETURN_IF_ERROR(read_horarun_store(
      env, l, l.size > 1 ? "HORA_SIZE=" + std::to_string(l.size) : std::string()));
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
  HORA_ASSIGN_OR_RETURN(RankLayout l, begin_layout(env, LayoutSource::kMpirun,
                                                   "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"));
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
  HORA_ASSIGN_OR_RETURN(RankLayout l,
                        begin_layout(env, LayoutSource::kSlurm, "SLURM_PROCID", "SLURM_NTASKS"));
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
  HORA_ASSIGN_OR_RETURN(RankLayout l,
                        begin_layout(env, LayoutSource::kTorchrun, "RANK", "WORLD_SIZE"));
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

StatusOr<RankLayout> read_rank_layout(const EnvLookup& lookup) {
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

StatusOr<RankLayout> read_rank_layout_from_env() { return read_rank_layout(read_env); }

StatusOr<RankLayout> read_elastic_store(const EnvLookup& lookup) {
  LayoutReader env(lookup);
  RankLayout l;
  l.source = LayoutSource::kHorarun;
  HORA_RETURN_IF_ERROR(read_horarun_store(env, l, "HORA_ELASTIC=1"));
  l.variables_read = env.read();
  return l;
}

RankLayout layout_of_slot(const RankLayout& store, int size,
                          const collectives::elastic::WorkerSlot& slot) {
  RankLayout l = store;
  l.size = size;
  l.rank = slot.rank;
  l.local_rank = slot.local_rank;
  l.local_size = slot.local_size;
  l.cross_rank = slot.cross_rank;
  l.cross_size = slot.cross_size;
  l.variables_read = store.variables_read + " (elastic worker " + std::to_string(slot.worker_id) +
                     ": rank " + std::to_string(slot.rank) + " of " + std::to_string(size) + ")";
  return l;
}

}  // namespace hora
