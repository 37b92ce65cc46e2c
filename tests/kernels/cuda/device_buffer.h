// DeviceBuffer: cudaMalloc'd memory for the GPU tests, with host copies in and out. Test
// support only; any failure is a test failure (ADD_FAILURE) and leaves the buffer empty.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hora {
namespace kernels_test {

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    cudaError_t e = cudaMalloc(&data_, bytes == 0 ? 1 : bytes);
    if (e != cudaSuccess) {
      ADD_FAILURE() << "cudaMalloc(" << bytes << "): " << cudaGetErrorString(e);
      data_ = nullptr;
    }
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  uint8_t* get() const { return static_cast<uint8_t*>(data_); }
  size_t bytes() const { return bytes_; }

  void upload(const void* host, size_t bytes, size_t offset = 0) {
    cudaError_t e = cudaMemcpy(get() + offset, host, bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) ADD_FAILURE() << "upload: " << cudaGetErrorString(e);
  }
  void upload(const std::vector<uint8_t>& host) { upload(host.data(), host.size()); }
  // Waits for all device work, then copies the whole buffer out.
  std::vector<uint8_t> download() const {
    std::vector<uint8_t> host(bytes_);
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaMemcpy(host.data(), data_, bytes_, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) ADD_FAILURE() << "download: " << cudaGetErrorString(e);
    return host;
  }

 private:
  void* data_ = nullptr;
  size_t bytes_;
};

}  // namespace kernels_test
}  // namespace hora
