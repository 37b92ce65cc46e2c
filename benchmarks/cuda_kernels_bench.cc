// cuda_kernels_bench: the CUDA kernels' bandwidth against a device-to-device cudaMemcpy of the
// same bytes, on one GPU (built with HORA_WITH_NCCL; exits 77 without a usable GPU).
//
// "bytes" is the size of one buffer, for every kernel alike (kernels_bench's convention), so a
// reduce (reads 2, writes 1) that keeps up with memory shows about 1.5x memcpy's GB/s and the
// ratio column is traffic-blind by design; the targets, on 256 MiB buffers:
//   reduce3 sum float32 / float16 / bfloat16  >= 0.8x memcpy
//   batched copy of 200 tensors of 64 KiB into one buffer  >= 0.8x memcpy of the same bytes
// Each line is the median of 20 timed launches (CUDA events) after 3 warm-ups.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_kernels.h"

namespace {

using hora::DataType;
using hora::ReduceOp;
namespace cuda = hora::kernels::cuda;

bool check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "cuda_kernels_bench: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

// Median microseconds of `run` (which enqueues on the default stream).
double median_us(const std::function<hora::Status()>& run) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int i = 0; i < 3; ++i) (void)run();
  std::vector<double> samples;
  for (int i = 0; i < 20; ++i) {
    cudaEventRecord(start);
    hora::Status s = run();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    if (!s.ok()) {
      std::fprintf(stderr, "cuda_kernels_bench: %s\n", s.to_string().c_str());
      return -1;
    }
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    samples.push_back(ms * 1000.0);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

void report(const char* name, size_t bytes, double us, double memcpy_us) {
  const double gbs = static_cast<double>(bytes) / (us * 1e3);
  std::printf("%-44s %12zu %10.1f %9.1f %7.2f\n", name, bytes, us, gbs, memcpy_us / us);
}

}  // namespace

int main() {
  auto devices = cuda::device_count();
  if (!devices.ok()) {
    std::printf("SKIPPED: no usable CUDA device: %s\n", devices.status().to_string().c_str());
    return 77;
  }
  constexpr size_t kBytes = size_t{256} << 20;
  void *a = nullptr, *b = nullptr, *c = nullptr;
  if (!check(cudaMalloc(&a, kBytes), "cudaMalloc") ||
      !check(cudaMalloc(&b, kBytes), "cudaMalloc") || !check(cudaMalloc(&c, kBytes), "cudaMalloc"))
    return 1;
  cudaMemset(a, 0, kBytes);
  cudaMemset(b, 0, kBytes);
  cudaMemset(c, 0, kBytes);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("# %s; bytes = one buffer; ratio = memcpy time / kernel time\n", prop.name);
  std::printf("%-44s %12s %10s %9s %7s\n", "kernel", "bytes", "time(us)", "GB/s", "ratio");

  const double memcpy_us = median_us([&] {
    return hora::kernels::cuda::scale_copy(b, a, kBytes, DataType::kUint8, 1.0, nullptr);
  });
  report("memcpy (cudaMemcpyAsync D2D)", kBytes, memcpy_us, memcpy_us);
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    const size_t count = kBytes / hora::data_type_bytes(dtype);
    const double us =
        median_us([&] { return cuda::reduce3(c, a, b, count, dtype, ReduceOp::kSum, nullptr); });
    report((std::string("reduce3 sum ") + hora::data_type_name(dtype)).c_str(), kBytes, us,
           memcpy_us);
  }
  {
    const size_t count = kBytes / 4;
    const double us =
        median_us([&] { return cuda::scale(a, count, DataType::kFloat32, 0.5, nullptr); });
    report("scale float32 (in place)", kBytes, us, memcpy_us);
  }
  // The engine's fusion case: 200 tensors of 64 KiB packed into one buffer.
  constexpr size_t kTensors = 200, kTensorBytes = 64 << 10, kPacked = kTensors * kTensorBytes;
  std::vector<cuda::CopyItem> items;
  for (size_t k = 0; k < kTensors; ++k)
    items.push_back({static_cast<char*>(b) + k * kTensorBytes,
                     static_cast<const char*>(a) + k * 2 * kTensorBytes, kTensorBytes / 4});
  const double pack_memcpy_us =
      median_us([&] { return cuda::scale_copy(b, a, kPacked, DataType::kUint8, 1.0, nullptr); });
  report("memcpy of the packed bytes (one call)", kPacked, pack_memcpy_us, pack_memcpy_us);
  const double pack_us = median_us([&] {
    return cuda::batched_scale_copy(items.data(), items.size(), DataType::kFloat32, 1.0, nullptr);
  });
  report("batched copy, 200 x 64 KiB", kPacked, pack_us, pack_memcpy_us);
  const double scaled_us = median_us([&] {
    return cuda::batched_scale_copy(items.data(), items.size(), DataType::kFloat32, 0.5, nullptr);
  });
  report("batched scaled copy (x0.5), 200 x 64 KiB", kPacked, scaled_us, pack_memcpy_us);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return 0;
}
