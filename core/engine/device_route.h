// Device routing: which path a tensor takes through the engine, decided from its Device and
// from what this job has for device tensors (DeviceSupport, the same on every rank: core/
// context.cc agrees on it through the store at init), and the staging plan of a device bucket.
//
//   host tensor                         -> kHost: the job's host communicator (builtin/MPI/Gloo)
//   device tensor, job has NCCL         -> kNative: the NCCL communicator, on the device
//   device tensor, GPU runtime, no NCCL -> kStaged: packed on the device, copied into pinned
//                                          host memory, reduced over the host communicator,
//                                          copied back and unpacked (Horovod's CPU backends)
//   device tensor, no GPU runtime       -> kFailedPrecondition naming the tensor and device
//
// Every rank takes the same path for a tensor because DeviceSupport's mode is job-wide; a tensor
// on a device other than this rank's GPU is refused at enqueue on that rank (one GPU per rank,
// as NCCL requires and Horovod assumes). Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hora/device.h"
#include "hora/status.h"

namespace hora {
namespace engine {

// How the job moves device tensors (job-wide).
enum class DeviceMode : uint8_t { kNone = 0, kNative, kStaged };
// How one tensor moves.
enum class DevicePath : uint8_t { kHost = 0, kNative, kStaged };

const char* device_mode_name(DeviceMode mode);  // "none", "nccl", "staged"
const char* device_path_name(DevicePath path);  // "host", "nccl", "staged"

struct DeviceSupport {
  DeviceMode mode = DeviceMode::kNone;
  // The CUDA ordinal of this rank's GPU (its NCCL communicator's device under kNative): one
  // GPU per rank, as Horovod and NCCL assume.
  int device = -1;
  // kNone: why (no CUDA in this build, no GPU on rank r, ...), for the error a device tensor
  // gets.
  std::string why_none = "this hora was built without CUDA (HORA_WITH_NCCL=OFF)";
};

// The path of tensor `name` on `device` (see the file comment). Errors name the tensor, the
// device and why; `what` says which of the call's tensors it is ("input", "output").
StatusOr<DevicePath> route_tensor(const std::string& name, const char* what, const Device& device,
                                  const DeviceSupport& support);

// What the engine does with one device allreduce bucket, step by step (device_executor.cc
// follows it; tests check it without a GPU).
enum class DeviceStep : uint8_t {
  kWaitReady,     // the engine's stream waits for each input's ready event (GPU side)
  kPack,          // batched copy of the inputs into the device fusion buffer, prescaled
  kCopyToHost,    // staged: device fusion buffer -> pinned host buffer
  kHostWait,      // the host waits for the engine's stream (event, with the deadline)
  kCollective,    // the collective: on the NCCL communicator, or over the host one
  kCopyToDevice,  // staged: pinned host buffer -> device fusion buffer
  kUnpack,        // batched copy out of the fusion buffer into the outputs, postscaled
  kFinalize,      // completion event recorded; the finalizer completes the handles after it
};
const char* device_step_name(DeviceStep step);

struct DeviceBucketPlan {
  DevicePath path = DevicePath::kNative;
  size_t total_bytes = 0;       // the fusion buffer (device) and, staged, the pinned buffer
  std::vector<size_t> offsets;  // byte offset of each member in the fusion buffer
  std::vector<DeviceStep> steps;
};

// The plan of an allreduce bucket whose members have `counts` elements of `element_bytes`
// each, on `path` (kNative or kStaged). Members are packed back to back in member order.
DeviceBucketPlan plan_device_allreduce(DevicePath path, const std::vector<size_t>& counts,
                                       size_t element_bytes);

}  // namespace engine
}  // namespace hora
