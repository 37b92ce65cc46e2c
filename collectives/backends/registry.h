// The backend registry: makes a Communicator of a named backend ("builtin", "gloo", later
// "mpi", "nccl"). This is the only file outside backends/<name>/ that knows which backends
// were built (the HORA_HAVE_* definitions); everything above asks here.
//
// Thread-safe (no state).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/rendezvous/store.h"
#include "core/base/deadline.h"
#include "core/base/status.h"

namespace hora {
namespace collectives {

// What any backend may need besides rank, size and store. Filled from Config and RankLayout
// by core/context.cc.
struct BackendOptions {
  std::string gloo_iface;       // HORA_GLOO_IFACE, empty = choose from rendezvous_addr
  std::string rendezvous_addr;  // the store's address: loopback means a local job
  double timeout_s = 300.0;     // HORA_TIMEOUT_S: the cap of every wait on a peer
  bool shm_enabled = true;      // HORA_SHM
  std::string secret;           // HORA_SECRET: proves membership on builtin TCP links
};

// The backends compiled into this build, in preference order for "auto".
std::vector<std::string> available_backends();
bool backend_available(const std::string& name);
// "auto" -> the first available backend for CPU tensors; other names unchanged.
std::string resolve_backend_name(const std::string& name);

// Creates rank `rank` of `size` of backend `name` ("auto" allowed), rendezvousing through
// `store` (borrowed for the call; pass a PrefixStore to keep communicators apart). Blocks
// until all ranks are connected or `deadline` (kTimeout). An unknown name gives
// kInvalidArgument; a known backend not built into this hora gives kUnimplemented naming the
// CMake option and package that enable it.
StatusOr<std::unique_ptr<Communicator>> make_communicator(const std::string& name, int rank,
                                                          int size, Store& store,
                                                          const BackendOptions& options,
                                                          Deadline deadline);

}  // namespace collectives
}  // namespace hora
