// DeviceSetup: what a job has for tensors in GPU memory, made at init (core/context.cc step 7)
// and owned by the Context: the GPU runtime, the NCCL communicator when the job uses NCCL, and
// the DeviceResources the engine's DeviceExecutor borrows.
//
// Protocol, under the store prefix "hora/device/<generation>/" (every rank, bounded by the
// start deadline):
//   1. make the GPU runtime (collectives::make_device_runtime: kUnimplemented in a build
//      without CUDA) and count this process's GPUs (0 without a runtime);
//   2. post the count as "gpus/<rank>" and read every rank's, so every rank decides alike
//      (decide_device_support below): NCCL (kNative) when HORA_BACKEND is nccl or auto with
//      NCCL built and every rank has a GPU; staged through host memory (kStaged) when the
//      backend is a host one and every rank has a GPU; none otherwise;
//   3. kNative: create the NCCL communicator (collectives::make_communicator "nccl", store
//      prefix "hora/comm/<generation>/nccl/") on the rank's GPU, local rank modulo its GPUs.
// Host tensors keep the job's host communicator (builtin, MPI or Gloo) in every case.
//
// Threads: create and destruction on the init/shutdown thread; the communicator then belongs
// to the engine thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/rendezvous/store.h"
#include "core/base/deadline.h"
#include "core/base/device_runtime.h"
#include "core/engine/device_executor.h"
#include "core/engine/device_route.h"
#include "hora/status.h"

namespace hora {

struct DeviceDecisionInput {
  // HORA_BACKEND as configured ("auto", "nccl", "builtin", ...).
  std::string requested_backend;
  // resolve_device_backend_name(requested): "nccl", or the host backend that stages.
  std::string device_backend;
  // Non-empty: this build has no GPU runtime (why; the same on every rank).
  std::string runtime_error;
  std::vector<int> gpu_counts;  // every rank's usable GPUs
  int rank = 0;
  int local_rank = -1;  // -1: use rank
};

// Step 2's decision, the same on every rank given the same counts. Fails only when
// HORA_BACKEND=nccl was asked for explicitly: kUnimplemented in a build without CUDA,
// kFailedPrecondition naming the rank without a GPU. Otherwise a job without GPUs everywhere
// gets DeviceMode::kNone with why_none saying which rank lacks one.
StatusOr<engine::DeviceSupport> decide_device_support(const DeviceDecisionInput& in);

class DeviceSetup {
 public:
  // Runs the protocol above. `store` must outlive the DeviceSetup.
  static StatusOr<std::unique_ptr<DeviceSetup>> create(const std::string& requested_backend,
                                                       int rank, int size, int local_rank,
                                                       int generation, double timeout_s,
                                                       collectives::Store& store,
                                                       Deadline deadline);
  ~DeviceSetup() = default;
  DeviceSetup(const DeviceSetup&) = delete;
  DeviceSetup& operator=(const DeviceSetup&) = delete;

  // Borrowed by the engine; valid while this object lives.
  const engine::DeviceResources& resources() const { return resources_; }

 private:
  DeviceSetup() = default;
  // Declared in destruction order's reverse: the communicator goes before its store and the
  // runtime.
  std::unique_ptr<DeviceRuntime> runtime_;
  std::unique_ptr<collectives::Store> comm_store_;
  std::unique_ptr<collectives::Communicator> comm_;
  engine::DeviceResources resources_;
};

}  // namespace hora
