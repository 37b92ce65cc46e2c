#include "core/device_setup.h"

#include <cstdlib>
#include <string>
#include <utility>

#include "collectives/backends/registry.h"
#include "collectives/rendezvous/prefix_store.h"

namespace hora {

StatusOr<engine::DeviceSupport> decide_device_support(const DeviceDecisionInput& in) {
  const bool required = in.requested_backend == "nccl";
  engine::DeviceSupport support;
  if (!in.runtime_error.empty()) {
    if (required) return Status::unimplemented("HORA_BACKEND=nccl: " + in.runtime_error);
    support.why_none = in.runtime_error;
    return support;
  }
  for (size_t r = 0; r < in.gpu_counts.size(); ++r) {
    if (in.gpu_counts[r] > 0) continue;
    const std::string why = "rank " + std::to_string(r) +
                            " has no usable CUDA device (GPU tensors need one on every rank)";
    if (required) return Status::failed_precondition("HORA_BACKEND=nccl: " + why);
    support.why_none = why;
    return support;
  }
  const int mine = in.gpu_counts.at(static_cast<size_t>(in.rank));
  support.device = (in.local_rank >= 0 ? in.local_rank : in.rank) % mine;
  support.mode =
      in.device_backend == "nccl" ? engine::DeviceMode::kNative : engine::DeviceMode::kStaged;
  support.why_none.clear();
  return support;
}

StatusOr<std::unique_ptr<DeviceSetup>> DeviceSetup::create(const std::string& requested_backend,
                                                           int rank, int size, int local_rank,
                                                           int generation, double timeout_s,
                                                           collectives::Store& store,
                                                           Deadline deadline) {
  std::unique_ptr<DeviceSetup> setup(new DeviceSetup());
  DeviceDecisionInput in;
  in.requested_backend = requested_backend;
  in.device_backend = collectives::resolve_device_backend_name(requested_backend);
  in.rank = rank;
  in.local_rank = local_rank;
  // 1. The runtime and this process's GPUs.
  StatusOr<std::unique_ptr<DeviceRuntime>> runtime = collectives::make_device_runtime();
  int mine = 0;
  if (runtime.ok()) {
    setup->runtime_ = std::move(runtime).value();
    mine = setup->runtime_->device_count();
  } else {
    in.runtime_error = runtime.status().message();
  }
  // 2. Every rank's count (a build without CUDA is the same everywhere: nothing to exchange).
  in.gpu_counts.assign(static_cast<size_t>(size), mine);
  if (size > 1 && in.runtime_error.empty()) {
    const std::string prefix = "hora/device/" + std::to_string(generation) + "/gpus/";
    const std::string text = std::to_string(mine);
    HORA_RETURN_IF_ERROR(
        store.set(prefix + std::to_string(rank), collectives::Bytes(text.begin(), text.end())));
    for (int r = 0; r < size; ++r) {
      StatusOr<collectives::Bytes> got = store.get(prefix + std::to_string(r), deadline);
      if (!got.ok())
        return got.status().with_context(" (hora init: rank " + std::to_string(rank) +
                                         " reading rank " + std::to_string(r) + "'s GPU count)");
      const std::string count(got.value().begin(), got.value().end());
      in.gpu_counts[static_cast<size_t>(r)] =
          static_cast<int>(std::strtol(count.c_str(), nullptr, 10));
    }
  }
  HORA_ASSIGN_OR_RETURN(engine::DeviceSupport support, decide_device_support(in));
  setup->resources_.support = support;
  if (support.mode != engine::DeviceMode::kNone) setup->resources_.runtime = setup->runtime_.get();
  // 3. The NCCL communicator.
  if (support.mode == engine::DeviceMode::kNative) {
    setup->comm_store_ = std::make_unique<collectives::PrefixStore>(
        "hora/comm/" + std::to_string(generation) + "/nccl", store);
    collectives::BackendOptions options;
    options.timeout_s = timeout_s;
    options.device = support.device;
    options.local_rank = local_rank;
    auto comm =
        collectives::make_communicator("nccl", rank, size, *setup->comm_store_, options, deadline);
    if (!comm.ok())
      return comm.status().with_context(" (hora init: rank " + std::to_string(rank) +
                                        " creating the NCCL communicator for GPU tensors on cuda:" +
                                        std::to_string(support.device) + ")");
    setup->comm_ = std::move(comm).value();
    setup->resources_.device_comm = setup->comm_.get();
  }
  return setup;
}

}  // namespace hora
