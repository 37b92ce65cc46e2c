// GPU sweep memory for --device cuda (built with HORA_WITH_NCCL only; see sweep_memory.h).
#include <cuda_runtime_api.h>

#include <algorithm>

#include "benchmarks/hora_bench/sweep_memory.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_status.h"

namespace hora {
namespace bench {
namespace {

Status cuda(cudaError_t e, const std::string& what) {
  return kernels::cuda::cuda_status(e, "hora-bench --device cuda: " + what);
}

class CudaSweepMemory final : public SweepMemory {
 public:
  CudaSweepMemory() = default;
  ~CudaSweepMemory() override {
    if (a_ != nullptr) cudaFree(a_);
    if (b_ != nullptr) cudaFree(b_);
  }
  CudaSweepMemory(const CudaSweepMemory&) = delete;
  CudaSweepMemory& operator=(const CudaSweepMemory&) = delete;

  Status init(int device, size_t bytes) {
    bytes = std::max<size_t>(bytes, 256);
    HORA_RETURN_IF_ERROR(
        cuda(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")"));
    for (void** p : {&a_, &b_}) {
      HORA_RETURN_IF_ERROR(cuda(cudaMalloc(p, bytes), "cudaMalloc(" + std::to_string(bytes) + ")"));
      HORA_RETURN_IF_ERROR(cuda(cudaMemset(*p, 0, bytes), "cudaMemset"));
    }
    return cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  uint8_t* a() override { return static_cast<uint8_t*>(a_); }
  uint8_t* b() override { return static_cast<uint8_t*>(b_); }
  Status upload(void* dst, const void* host, size_t bytes) override {
    return cuda(cudaMemcpy(dst, host, bytes, cudaMemcpyHostToDevice), "upload");
  }
  Status download(void* host, const void* src, size_t bytes) override {
    // Every stream's work must have landed before the result is read.
    HORA_RETURN_IF_ERROR(cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize"));
    return cuda(cudaMemcpy(host, src, bytes, cudaMemcpyDeviceToHost), "download");
  }
  bool on_device() const override { return true; }

 private:
  void* a_ = nullptr;
  void* b_ = nullptr;
};

}  // namespace

StatusOr<std::unique_ptr<SweepMemory>> make_cuda_sweep_memory(int device, size_t bytes) {
  auto memory = std::make_unique<CudaSweepMemory>();
  HORA_RETURN_IF_ERROR(memory->init(device, bytes));
  return std::unique_ptr<SweepMemory>(std::move(memory));
}

StatusOr<int> cuda_device_count() { return kernels::cuda::device_count(); }

}  // namespace bench
}  // namespace hora
