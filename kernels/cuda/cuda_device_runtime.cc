// CudaDeviceRuntime: DeviceRuntime over the CUDA runtime API. Each call makes `device` current
// for its duration (DeviceGuard) and restores the caller's device, so the framework's notion of
// the current device is never changed behind its back.
#include "kernels/cuda/cuda_device_runtime.h"

#include <cuda_runtime_api.h>

#include <string>
#include <thread>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_status.h"

namespace hora {
namespace kernels {
namespace cuda {
namespace {

std::string on(const char* what, int device) {
  return std::string(what) + " on cuda:" + std::to_string(device);
}

// Makes `device` current until destroyed; status() says whether that worked.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device)
      status_ = cuda_status(cudaSetDevice(device), on("cudaSetDevice", device));
    else
      previous_ = -1;  // nothing to restore
  }
  ~DeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  const Status& status() const { return status_; }

 private:
  int previous_ = -1;
  Status status_;
};

cudaStream_t as_stream(DeviceStream s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t as_event(DeviceEvent e) { return static_cast<cudaEvent_t>(e); }

class CudaDeviceRuntime final : public DeviceRuntime {
 public:
  const char* name() const override { return "cuda"; }

  int device_count() override {
    StatusOr<int> n = kernels::cuda::device_count();
    return n.ok() ? n.value() : 0;
  }

  StatusOr<DeviceStream> create_stream(int device) override {
    DeviceGuard guard(device);
    HORA_RETURN_IF_ERROR(guard.status());
    cudaStream_t s = nullptr;
    HORA_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                                     on("cudaStreamCreateWithFlags", device)));
    return static_cast<DeviceStream>(s);
  }
  void destroy_stream(int device, DeviceStream stream) override {
    DeviceGuard guard(device);
    if (stream != nullptr) cudaStreamDestroy(as_stream(stream));
  }

  StatusOr<DeviceEvent> create_event(int device) override {
    DeviceGuard guard(device);
    HORA_RETURN_IF_ERROR(guard.status());
    cudaEvent_t e = nullptr;
    HORA_RETURN_IF_ERROR(cuda_status(cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
                                     on("cudaEventCreateWithFlags", device)));
    return static_cast<DeviceEvent>(e);
  }
  void destroy_event(int device, DeviceEvent event) override {
    DeviceGuard guard(device);
    if (event != nullptr) cudaEventDestroy(as_event(event));
  }

  Status record_event(int device, DeviceEvent event, DeviceStream stream) override {
    DeviceGuard guard(device);
    HORA_RETURN_IF_ERROR(guard.status());
    return cuda_status(cudaEventRecord(as_event(event), as_stream(stream)),
                       on("cudaEventRecord", device));
  }
  Status stream_wait_event(int device, DeviceStream stream, DeviceEvent event) override {
    DeviceGuard guard(device);
    HORA_RETURN_IF_ERROR(guard.status());
    return cuda_status(cudaStreamWaitEvent(as_stream(stream), as_event(event), 0),
                       on("cudaStreamWaitEvent", device));
  }
  Status wait_event(int device, DeviceEvent event, Deadline deadline,
                    const std::string& what) override {
    DeviceGuard guard(device);
    HORA_RETURN_IF_ERROR(guard.status());
    // Polled (a yield between queries) rather than cudaEventSynchronize, which has no deadline.
    for (;;) {
      const cudaError_t e = cudaEventQuery(as_event(event));
      if (e == cudaSuccess) return Status::OK();
      if (e != cudaErrorNotReady) return cuda_status(e, on(what.c_str(), device));
      if (deadline.expired())
        return Status::timeout(on(what.c_str(), device) +
                               ": the GPU work did not complete before the deadline "
                               "(HORA_TIMEOUT_S)");
      std::this_thread::yield();
    }
  }

  StatusOr<bool> query_event(int device, DeviceEvent event, const std::string& what) override {
    DeviceGuard guard(device);
    HORA_RETURN_IF_ERROR(guard.status());
    const cudaError_t e = cudaEventQuery(as_event(event));
    if (e == cudaSuccess) return true;
    if (e == cudaErrorNotReady) return false;
    return cuda_status(e, on(what.c_str(), device));
  }

  StatusOr<void*> alloc_device(int device, size_t bytes) override {
    if (bytes == 0) return static_cast<void*>(nullptr);
    DeviceGuard guard(device);
    HORA_RETURN_IF_ERROR(guard.status());
    void* p = nullptr;
    HORA_RETURN_IF_ERROR(
        cuda_status(cudaMalloc(&p, bytes),
                    on(("cudaMalloc of " + std::to_string(bytes) + " bytes").c_str(), device)));
    return p;
  }
  void free_device(int device, void* ptr) override {
    DeviceGuard guard(device);
    if (ptr != nullptr) cudaFree(ptr);
  }
  StatusOr<void*> alloc_pinned(size_t bytes) override {
    if (bytes == 0) return static_cast<void*>(nullptr);
    void* p = nullptr;
    HORA_RETURN_IF_ERROR(cuda_status(cudaMallocHost(&p, bytes),
                                     "cudaMallocHost of " + std::to_string(bytes) + " bytes"));
    return p;
  }
  void free_pinned(void* ptr) override {
    if (ptr != nullptr) cudaFreeHost(ptr);
  }

  Status memcpy_async(int device, void* dst, const void* src, size_t bytes,
                      DeviceStream stream) override {
    if (bytes == 0) return Status::OK();
    DeviceGuard guard(device);
    HORA_RETURN_IF_ERROR(guard.status());
    return cuda_status(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, as_stream(stream)),
                       on("cudaMemcpyAsync", device));
  }
  Status batched_scale_copy_async(int device, const std::vector<DeviceCopyItem>& items,
                                  DataType dtype, double factor, DeviceStream stream) override {
    if (items.empty()) return Status::OK();
    DeviceGuard guard(device);
    HORA_RETURN_IF_ERROR(guard.status());
    std::vector<CopyItem> copies(items.size());
    for (size_t i = 0; i < items.size(); ++i)
      copies[i] = CopyItem{items[i].dst, items[i].src, items[i].count};
    return batched_scale_copy(copies.data(), copies.size(), dtype, factor, as_stream(stream));
  }
  Status memset_zero_async(int device, void* buf, size_t bytes, DeviceStream stream) override {
    if (bytes == 0) return Status::OK();
    DeviceGuard guard(device);
    HORA_RETURN_IF_ERROR(guard.status());
    return cuda_status(cudaMemsetAsync(buf, 0, bytes, as_stream(stream)),
                       on("cudaMemsetAsync", device));
  }
  Status cast_async(int device, void* dst, DataType dst_dtype, const void* src, DataType src_dtype,
                    size_t count, DeviceStream stream) override {
    DeviceGuard guard(device);
    HORA_RETURN_IF_ERROR(guard.status());
    cudaStream_t st = as_stream(stream);
    auto* half = static_cast<uint16_t*>(dst);
    const auto* half_in = static_cast<const uint16_t*>(src);
    if (src_dtype == DataType::kFloat32 && dst_dtype == DataType::kFloat16)
      return cast_f32_to_f16(half, static_cast<const float*>(src), count, st);
    if (src_dtype == DataType::kFloat32 && dst_dtype == DataType::kBFloat16)
      return cast_f32_to_bf16(half, static_cast<const float*>(src), count, st);
    if (src_dtype == DataType::kFloat16 && dst_dtype == DataType::kFloat32)
      return cast_f16_to_f32(static_cast<float*>(dst), half_in, count, st);
    if (src_dtype == DataType::kBFloat16 && dst_dtype == DataType::kFloat32)
      return cast_bf16_to_f32(static_cast<float*>(dst), half_in, count, st);
    return Status::invalid_argument(std::string("cast_async on cuda:") + std::to_string(device) +
                                    ": no cast from " + data_type_name(src_dtype) + " to " +
                                    data_type_name(dst_dtype) +
                                    " (float32 to or from float16/bfloat16 only)");
  }
};

}  // namespace

std::unique_ptr<DeviceRuntime> make_cuda_device_runtime() {
  return std::make_unique<CudaDeviceRuntime>();
}

}  // namespace cuda
}  // namespace kernels
}  // namespace hora
