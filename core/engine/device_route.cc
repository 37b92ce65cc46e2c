#include "core/engine/device_route.h"

#include <iterator>

#include "core/base/name_table.h"

namespace hora {
namespace engine {
namespace {

// Each indexed by the enum's value.
constexpr const char* kModeNames[] = {"none", "nccl", "staged"};
constexpr const char* kPathNames[] = {"host", "nccl", "staged"};
constexpr const char* kStepNames[] = {"wait_ready", "pack",           "copy_to_host", "host_wait",
                                      "collective", "copy_to_device", "unpack",       "finalize"};
static_assert(std::size(kStepNames) == static_cast<size_t>(DeviceStep::kFinalize) + 1);

}  // namespace

const char* device_mode_name(DeviceMode mode) { return name_of(kModeNames, mode, "?"); }
const char* device_path_name(DevicePath path) { return name_of(kPathNames, path, "?"); }
const char* device_step_name(DeviceStep step) { return name_of(kStepNames, step, "?"); }

StatusOr<DevicePath> route_tensor(const std::string& name, const char* what, const Device& device,
                                  const DeviceSupport& support) {
  if (device.is_cpu()) return DevicePath::kHost;
  // Built only for an error: routing is on every device tensor's enqueue.
  auto who = [&] { return "tensor '" + name + "': " + what + " is on " + device.to_string(); };
  switch (support.mode) {
    case DeviceMode::kNone:
      return Status::failed_precondition(who() +
                                         " but this job has no GPU path: " + support.why_none);
    case DeviceMode::kNative:
    case DeviceMode::kStaged:
      if (device.index != support.device)
        return Status::invalid_argument(
            who() + " but this rank's GPU is cuda:" + std::to_string(support.device) +
            " (one GPU per rank: move the tensor there, or set CUDA_VISIBLE_DEVICES per rank)");
      return support.mode == DeviceMode::kNative ? DevicePath::kNative : DevicePath::kStaged;
  }
  return Status::internal(who() + ": unknown device mode");
}

DeviceBucketPlan plan_device_allreduce(DevicePath path, const std::vector<size_t>& counts,
                                       size_t element_bytes) {
  DeviceBucketPlan plan;
  plan.path = path;
  plan.offsets.reserve(counts.size());
  for (size_t count : counts) {
    plan.offsets.push_back(plan.total_bytes);
    plan.total_bytes += count * element_bytes;
  }
  plan.steps = {DeviceStep::kWaitReady, DeviceStep::kPack};
  if (path == DevicePath::kStaged) {
    // The host reduces the pinned copy: it waits for that copy, and only for it.
    plan.steps.insert(plan.steps.end(),
                      {DeviceStep::kCopyToHost, DeviceStep::kHostWait, DeviceStep::kCollective,
                       DeviceStep::kCopyToDevice, DeviceStep::kUnpack, DeviceStep::kFinalize});
  } else {
    // NCCL's allreduce is enqueued on the engine's stream behind the pack: no host wait.
    plan.steps.insert(plan.steps.end(),
                      {DeviceStep::kCollective, DeviceStep::kUnpack, DeviceStep::kFinalize});
  }
  return plan;
}

}  // namespace engine
}  // namespace hora
