// RankLayout: where this process sits in the job (rank, size, local and cross ranks) and how
// the job's ranks find each other (the rendezvous store), as read from the launcher's
// environment once at init.
//
// read_rank_layout reads it through an EnvLookup (the process environment: read_env,
// core/env_source.h); this file holds the plain value, its validation and every launcher's
// variables (Config, core/config.h, holds the HORA_* settings). The sources, in precedence order:
//   1. horarun:  HORA_RANK, HORA_SIZE, HORA_LOCAL_*, HORA_CROSS_*, HORA_HOSTNAME,
//                HORA_RENDEZVOUS_ADDR/PORT, HORA_SECRET (horarun hosts the store).
//   2. mpirun:   OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE.
//   3. Slurm:    SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_TASKS_PER_NODE (or
//                SLURM_NTASKS_PER_NODE), SLURM_NODEID, SLURM_NNODES.
//   4. torchrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK,
//                GROUP_WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
//   5. none of these: a single process, rank 0 of 1, no store.
// For sources 2-4 no launcher hosts a store, so rank 0 hosts one (hosts_store) at
// HORA_RENDEZVOUS_ADDR:PORT when set, else MASTER_ADDR:MASTER_PORT (torchrun: MASTER_PORT + 1
// when TORCHELASTIC_USE_AGENT_STORE is set, because torchrun's agent holds MASTER_PORT).
//
// A plain value; thread-safe to read.
#pragma once

#include <string>
#include <vector>

#include "collectives/rendezvous/elastic_protocol.h"
#include "core/engine/round_counts.h"
#include "core/env_source.h"
#include "hora/status.h"

namespace hora {

// The largest job hora runs: the negotiation round counts ranks in int64 words that hold up to
// about 2 million (core/engine/round_counts.h); validate_layout refuses more.
using engine::kMaxRanks;

enum class LayoutSource { kSingle = 0, kHorarun, kMpirun, kSlurm, kTorchrun };

// "single process", "horarun", "mpirun", "slurm", "torchrun".
const char* layout_source_name(LayoutSource source);

struct RankLayout {
  LayoutSource source = LayoutSource::kSingle;
  int rank = 0;
  int size = 1;
  int local_rank = 0;  // rank among the ranks of this host
  int local_size = 1;
  int cross_rank = 0;  // index of this host among the job's hosts
  int cross_size = 1;
  std::string hostname;  // HORA_HOSTNAME or empty

  // Rendezvous. Empty store_addr: no store (single process, or a backend that needs none).
  std::string store_addr;
  int store_port = 0;
  bool hosts_store = false;  // true on the rank that must start the TcpStoreServer
  std::string secret;        // HORA_SECRET (or the documented torchrun fallback)
  bool secret_is_fallback = false;

  // The environment variables this layout was read from ("HORA_RANK=1 HORA_SIZE=2 ..."),
  // for error messages.
  std::string variables_read;

  bool has_store() const { return !store_addr.empty(); }
};

// Checks the invariants: 1 <= size <= kMaxRanks, 0 <= rank < size, 0 <= local_rank < local_size <=
// size, 0 <= cross_rank < cross_size <= size, a store port in [1, 65535] when a store address is
// given. The message names the source and the variables read.
Status validate_layout(const RankLayout& layout);

// Ranks as messages list them: "0, 2, 3".
std::string rank_list(const std::vector<int>& ranks);

// Reads the rank layout (the sources above, in that precedence) through `lookup`, validated.
// Fails (kInvalidArgument) on an incomplete source (HORA_RANK without HORA_SIZE), a malformed
// or out-of-range value, or HORA_* disagreeing with OMPI_COMM_WORLD_*; every message names the
// variables read.
StatusOr<RankLayout> read_rank_layout(const EnvLookup& lookup);
// read_rank_layout(read_env).
StatusOr<RankLayout> read_rank_layout_from_env();

// Elastic mode (HORA_ELASTIC=1, core/elastic_member.h): horarun gives the store's address
// (HORA_RENDEZVOUS_ADDR/PORT, HORA_SECRET, all required) and HORA_HOSTNAME but no rank; the
// rank, size, local and cross fields come from each generation's assignment.
StatusOr<RankLayout> read_elastic_store(const EnvLookup& lookup);
// `store`'s address and hostname with the place `slot` has in an assignment of `size` workers.
RankLayout layout_of_slot(const RankLayout& store, int size,
                          const collectives::elastic::WorkerSlot& slot);

// The HORA_* variables read_rank_layout reads: horarun's, and the store's for the other
// launchers. Inline, so that horarun (which sets them) shares the list without linking core.
inline constexpr const char* kLayoutVariables[] = {"HORA_RANK",
                                                   "HORA_SIZE",
                                                   "HORA_LOCAL_RANK",
                                                   "HORA_LOCAL_SIZE",
                                                   "HORA_CROSS_RANK",
                                                   "HORA_CROSS_SIZE",
                                                   "HORA_HOSTNAME",
                                                   "HORA_RENDEZVOUS_ADDR",
                                                   "HORA_RENDEZVOUS_PORT",
                                                   "HORA_SECRET"};
// Whether `name` is one of kLayoutVariables.
inline bool layout_reads(const std::string& name) {
  for (const char* v : kLayoutVariables)
    if (name == v) return true;
  return false;
}

}  // namespace hora
