// The backend registry: makes a Communicator of a named backend ("builtin", "gloo", "mpi",
// "nccl"). This is the only file outside backends/<name>/ that knows which backends
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
#include "core/base/device_runtime.h"
#include "hora/status.h"

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
  // builtin: bytes of this rank's region in shared memory (Communicator::shared_buffer), the
  // engine's fusion buffer; 0 = none. Pre-faulted at creation.
  size_t shared_buffer_bytes = 0;
  // nccl: the GPU, as a CUDA ordinal; -1 = this rank's index on its host
  // (RankLayout::local_rank, or the global rank when that is -1) modulo the GPUs.
  int device = -1;
  int local_rank = -1;
  // A process set's communicator (hora/process_set.h): the job's ranks of its members, sorted,
  // whose index is the `rank` given to make_communicator; empty for the job's own. Only mpi
  // needs them (its communicator is a group of MPI_COMM_WORLD); the others rendezvous through
  // the store they are given.
  std::vector<int> members;
  // mpi: the job will have process sets, so MPI is initialised with MPI_THREAD_MULTIPLE.
  bool thread_multiple = false;
};

// The backends compiled into this build, in preference order for "auto".
std::vector<std::string> available_backends();
bool backend_available(const std::string& name);
// "auto" -> the first available backend for CPU tensors (never nccl, which moves GPU memory
// only); other names unchanged.
std::string resolve_backend_name(const std::string& name);
// "auto" -> the backend for GPU tensors: nccl when it is built, else as resolve_backend_name
// (a host backend, which then needs the tensors staged through host memory). Other names
// unchanged.
std::string resolve_device_backend_name(const std::string& name);
// As resolve_backend_name, for a job whose ranks mpirun started (`launched_by_mpirun`, i.e.
// OMPI_COMM_WORLD_* set): there "auto" means "mpi" when the MPI backend is built, since MPI
// is what the job was started for. A named backend stays as named.
std::string resolve_backend_name_for_job(const std::string& name, bool launched_by_mpirun);
// True for a backend that connects without the store (mpi: MPI_COMM_WORLD already joins the
// ranks), so core/context.cc may create it first and use it to share the store's address.
bool backend_connects_without_store(const std::string& name);

// Creates rank `rank` of `size` of backend `name` ("auto" allowed), rendezvousing through
// `store` (pass a PrefixStore to keep communicators apart; it must outlive the communicator,
// whose failure reports may use it). Blocks
// until all ranks are connected or `deadline` (kTimeout). An unknown name gives
// kInvalidArgument; a known backend not built into this hora gives kUnimplemented naming the
// CMake option and package that enable it.
StatusOr<std::unique_ptr<Communicator>> make_communicator(const std::string& name, int rank,
                                                          int size, Store& store,
                                                          const BackendOptions& options,
                                                          Deadline deadline);

// The GPU runtime for tensors in device memory (core/base/device_runtime.h): CUDA where this
// hora was built with it (HORA_WITH_NCCL), else kUnimplemented naming the CMake option. A
// process without a usable GPU gets the runtime; its device_count() is then 0.
StatusOr<std::unique_ptr<DeviceRuntime>> make_device_runtime();

}  // namespace collectives
}  // namespace hora
