#include "collectives/backends/registry.h"

#include <algorithm>
#include <chrono>

#include "collectives/backends/builtin/builtin_communicator.h"

#if HORA_HAVE_GLOO
#include "collectives/backends/gloo/gloo_communicator.h"
#endif
#if HORA_HAVE_MPI
#include "collectives/backends/mpi/mpi_communicator.h"
#endif
#if HORA_HAVE_NCCL
#include "collectives/backends/nccl/nccl_communicator.h"
#include "kernels/cuda/cuda_device_runtime.h"
#endif

namespace hora {
namespace collectives {
namespace {

struct KnownBackend {
  const char* name;
  bool built;
  const char* how_to_enable;
};

constexpr KnownBackend kKnown[] = {
    {"builtin", true, ""},
#if HORA_HAVE_GLOO
    {"gloo", true, ""},
#else
    {"gloo", false, "configure with HORA_WITH_GLOO=ON after installing libgloo-dev"},
#endif
#if HORA_HAVE_MPI
    {"mpi", true, ""},
#else
    {"mpi", false, "configure with HORA_WITH_MPI=ON after installing libopenmpi-dev"},
#endif
#if HORA_HAVE_NCCL
    {"nccl", true, ""},
#else
    {"nccl", false, "configure with HORA_WITH_NCCL=ON with CUDA (nvcc) and NCCL installed"},
#endif
};

std::string known_names() {
  std::string names = "auto";
  for (const KnownBackend& b : kKnown) names += std::string(", ") + b.name;
  return names;
}

}  // namespace

std::vector<std::string> available_backends() {
  std::vector<std::string> names;
  for (const KnownBackend& b : kKnown)
    if (b.built) names.push_back(b.name);
  return names;
}

bool backend_available(const std::string& name) {
  const std::string resolved = resolve_backend_name(name);
  for (const KnownBackend& b : kKnown)
    if (resolved == b.name) return b.built;
  return false;
}

std::string resolve_backend_name(const std::string& name) {
  if (name != "auto") return name;
  // nccl moves GPU memory only: "auto" means a host backend.
  for (const std::string& b : available_backends())
    if (b != "nccl") return b;
  return "builtin";
}

std::string resolve_device_backend_name(const std::string& name) {
  if (name == "auto" && backend_available("nccl")) return "nccl";
  return resolve_backend_name(name);
}

std::string resolve_backend_name_for_job(const std::string& name, bool launched_by_mpirun) {
  if (name == "auto" && launched_by_mpirun && backend_available("mpi")) return "mpi";
  return resolve_backend_name(name);
}

bool backend_connects_without_store(const std::string& name) {
  return resolve_backend_name(name) == "mpi" && backend_available("mpi");
}

StatusOr<std::unique_ptr<Communicator>> make_communicator(const std::string& name, int rank,
                                                          int size, Store& store,
                                                          const BackendOptions& options,
                                                          Deadline deadline) {
  const std::string resolved = resolve_backend_name(name);
  const KnownBackend* known = nullptr;
  for (const KnownBackend& b : kKnown)
    if (resolved == b.name) known = &b;
  if (known == nullptr)
    return Status::invalid_argument("HORA_BACKEND='" + name + "' is not a backend: expected " +
                                    known_names());
  if (!known->built)
    return Status::unimplemented("backend '" + resolved +
                                 "' is not built into this hora: " + known->how_to_enable);
  if (resolved == "builtin") {
    BuiltinOptions builtin;
    builtin.shm_enabled = options.shm_enabled;
    builtin.secret = options.secret;
    builtin.shm_shared_bytes = options.shared_buffer_bytes;
    builtin.members = options.members;
    builtin.timeout_s = std::max(
        0.001, std::chrono::duration<double>(deadline.at() - Deadline::Clock::now()).count());
    return make_builtin_communicator(rank, size, store, builtin);
  }
#if HORA_HAVE_MPI
  if (resolved == "mpi") {
    MpiOptions mpi;
    mpi.members = options.members;
    mpi.thread_multiple = options.thread_multiple;
    return make_mpi_communicator(rank, size, mpi);
  }
#endif
#if HORA_HAVE_GLOO
  if (resolved == "gloo") {
    GlooOptions gloo;
    gloo.iface = options.gloo_iface;
    gloo.rendezvous_addr = options.rendezvous_addr;
    gloo.timeout_s = options.timeout_s;
    gloo.members = options.members;
    return create_gloo_communicator(rank, size, store, gloo, deadline);
  }
#endif
#if HORA_HAVE_NCCL
  if (resolved == "nccl") {
    NcclOptions nccl;
    nccl.device = options.device;
    nccl.local_rank = options.local_rank;
    return create_nccl_communicator(rank, size, store, nccl, deadline);
  }
#endif
  (void)rank;
  (void)size;
  (void)store;
  (void)options;
  (void)deadline;
  return Status::internal("backend '" + resolved + "' is marked built but has no factory");
}

StatusOr<std::unique_ptr<DeviceRuntime>> make_device_runtime() {
#if HORA_HAVE_NCCL
  return kernels::cuda::make_cuda_device_runtime();
#else
  return Status::unimplemented(
      "this hora was built without CUDA: configure with HORA_WITH_NCCL=ON with CUDA (nvcc) and "
      "NCCL installed");
#endif
}

}  // namespace collectives
}  // namespace hora
