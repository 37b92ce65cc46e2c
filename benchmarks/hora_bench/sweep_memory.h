// SweepMemory: the two buffers a sweep runs on (runner.h), in host memory or in one GPU's
// (--device cuda), with the copies the runner needs to write inputs and read outputs there.
// Owned by the runner; one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "hora/device.h"
#include "hora/status.h"

namespace hora {
namespace bench {

class SweepMemory {
 public:
  virtual ~SweepMemory() = default;
  // The two buffers, each at least the bytes asked for, 256-byte aligned and zeroed.
  virtual uint8_t* a() = 0;
  virtual uint8_t* b() = 0;
  // Host -> buffer and buffer -> host copies of `bytes` (pointers into a() or b()); blocking.
  virtual Status upload(void* dst, const void* host, size_t bytes) = 0;
  virtual Status download(void* host, const void* src, size_t bytes) = 0;
  virtual bool on_device() const = 0;
};

// Host memory for Device::cpu(), pre-faulted; GPU memory for cuda:N (kUnimplemented when
// hora was built without HORA_WITH_NCCL; the CUDA error when allocation fails).
StatusOr<std::unique_ptr<SweepMemory>> make_sweep_memory(const Device& device, size_t bytes);

// --device cuda without an index (index -1) means this rank's GPU: local_rank modulo the GPUs
// of the host. Any other device is returned as is. kFailedPrecondition when there is no GPU.
StatusOr<Device> resolve_device(const Device& requested, int local_rank);

}  // namespace bench
}  // namespace hora
