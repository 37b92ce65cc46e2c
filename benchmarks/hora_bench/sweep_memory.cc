// Host sweep memory, and the choice between it and the GPU's (cuda_sweep_memory.cc, built
// with HORA_WITH_NCCL only).
#include "benchmarks/hora_bench/sweep_memory.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace hora {
namespace bench {

#if HORA_HAVE_NCCL
StatusOr<std::unique_ptr<SweepMemory>> make_cuda_sweep_memory(int device, size_t bytes);
StatusOr<int> cuda_device_count();
#endif

namespace {

class HostSweepMemory final : public SweepMemory {
 public:
  explicit HostSweepMemory(size_t bytes)
      : bytes_(std::max<size_t>(bytes, 256)), a_(allocate(bytes_)), b_(allocate(bytes_)) {}
  uint8_t* a() override { return a_.get(); }
  uint8_t* b() override { return b_.get(); }
  Status upload(void* dst, const void* host, size_t bytes) override {
    if (dst != host) std::memcpy(dst, host, bytes);
    return Status::OK();
  }
  Status download(void* host, const void* src, size_t bytes) override {
    if (host != src) std::memcpy(host, src, bytes);
    return Status::OK();
  }
  bool on_device() const override { return false; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { ::operator delete(p, std::align_val_t(256)); }
  };
  using Ptr = std::unique_ptr<uint8_t, Free>;
  // Zero-filled at once, so no page is first touched inside a timed loop.
  static Ptr allocate(size_t bytes) {
    Ptr p(static_cast<uint8_t*>(::operator new(bytes, std::align_val_t(256))));
    std::memset(p.get(), 0, bytes);
    return p;
  }
  size_t bytes_;
  Ptr a_, b_;
};

}  // namespace

StatusOr<std::unique_ptr<SweepMemory>> make_sweep_memory(const Device& device, size_t bytes) {
  if (device.is_cpu()) return std::unique_ptr<SweepMemory>(new HostSweepMemory(bytes));
#if HORA_HAVE_NCCL
  return make_cuda_sweep_memory(device.index, bytes);
#else
  return Status::unimplemented("--device " + device.to_string() +
                               ": hora was built without CUDA (HORA_WITH_NCCL)");
#endif
}

StatusOr<Device> resolve_device(const Device& requested, int local_rank) {
  if (!requested.is_cuda() || requested.index >= 0) return requested;
#if HORA_HAVE_NCCL
  HORA_ASSIGN_OR_RETURN(int count, cuda_device_count());
  return Device::cuda(local_rank % count);
#else
  (void)local_rank;
  return Status::unimplemented("--device cuda: hora was built without CUDA (HORA_WITH_NCCL)");
#endif
}

}  // namespace bench
}  // namespace hora
