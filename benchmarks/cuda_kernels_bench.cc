// cuda_kernels_bench: the CUDA kernels' bandwidth against a device-to-device memcpy, on one GPU
// (built with HORA_WITH_NCCL; exits 77 without a usable GPU).
//
// A kernel's figure is bytes moved (every byte read and written) over time, against memcpy's
// bytes moved over time (a copy reads and writes each byte): a reduce3 moves 3 buffers, a
// reduce with average (reduce3, then the scale in place) 5, a copy or scaled copy 2. The
// issue's targets, on 256 MiB buffers and on the engine's 200 x 64 KiB fusion case (against a
// memcpy of the same packed bytes):
//   reduce3 sum and average-with-scale, float32 / float16 / bfloat16  >= 0.85x memcpy
//   batched pack and unpack, plain and scaled (x0.5)                  >= 0.85x memcpy
// Each line is the median of 20 timed launches (CUDA events) after 3 warm-ups; every target
// also prints a "target:" line (scripts/gpu_check.sh's summary collects them).
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

// One row: `moved` bytes read and written in `us`, against memcpy's `memcpy_gbs` (bytes
// moved per ns); `target` > 0 adds a "target:" line.
void report(const std::string& name, size_t bytes, size_t moved, double us, double memcpy_gbs,
            double target) {
  const double gbs = static_cast<double>(moved) / (us * 1e3);
  const double ratio = gbs / memcpy_gbs;
  std::printf("%-48s %12zu %10.1f %9.1f %7.2f\n", name.c_str(), bytes, us, gbs, ratio);
  if (target > 0)
    std::printf("target: kernel %s: %.2fx memcpy's bytes moved per second (target >= %.2fx): %s\n",
                name.c_str(), ratio, target, ratio >= target ? "met" : "missed");
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
  std::printf(
      "# %s; bytes = one buffer; GB/s = bytes moved (read + written) per second; "
      "ratio = that over memcpy's\n",
      prop.name);
  std::printf("%-48s %12s %10s %9s %7s\n", "kernel", "bytes", "time(us)", "GB/s", "ratio");
  constexpr double kTarget = 0.85;

  const double memcpy_us = median_us([&] {
    return hora::kernels::cuda::scale_copy(b, a, kBytes, DataType::kUint8, 1.0, nullptr);
  });
  const double memcpy_gbs = 2.0 * kBytes / (memcpy_us * 1e3);
  report("memcpy (cudaMemcpyAsync D2D)", kBytes, 2 * kBytes, memcpy_us, memcpy_gbs, 0);
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    const size_t count = kBytes / hora::data_type_bytes(dtype);
    const std::string dt = hora::data_type_name(dtype);
    const double sum_us =
        median_us([&] { return cuda::reduce3(c, a, b, count, dtype, ReduceOp::kSum, nullptr); });
    report("reduce3 sum " + dt, kBytes, 3 * kBytes, sum_us, memcpy_gbs, kTarget);
    // Average with scaling: the sum, then x 1/2 in place (what an average of two does).
    const double avg_us = median_us([&]() -> hora::Status {
      HORA_RETURN_IF_ERROR(cuda::reduce3(c, a, b, count, dtype, ReduceOp::kAverage, nullptr));
      return cuda::scale(c, count, dtype, 0.5, nullptr);
    });
    report("reduce3 average (sum + scale x0.5) " + dt, kBytes, 5 * kBytes, avg_us, memcpy_gbs,
           kTarget);
  }
  {
    const size_t count = kBytes / 4;
    const double us =
        median_us([&] { return cuda::scale(a, count, DataType::kFloat32, 0.5, nullptr); });
    report("scale float32 (in place)", kBytes, 2 * kBytes, us, memcpy_gbs, 0);
  }
  // The engine's fusion case: 200 tensors of 64 KiB packed into one buffer and back out.
  constexpr size_t kTensors = 200, kTensorBytes = 64 << 10, kPacked = kTensors * kTensorBytes;
  std::vector<cuda::CopyItem> pack, unpack;
  for (size_t k = 0; k < kTensors; ++k) {
    char* tensor = static_cast<char*>(a) + k * 2 * kTensorBytes;
    char* slot = static_cast<char*>(b) + k * kTensorBytes;
    pack.push_back({slot, tensor, kTensorBytes / 4});
    unpack.push_back({tensor, slot, kTensorBytes / 4});
  }
  const double pack_memcpy_us =
      median_us([&] { return cuda::scale_copy(b, a, kPacked, DataType::kUint8, 1.0, nullptr); });
  const double pack_memcpy_gbs = 2.0 * kPacked / (pack_memcpy_us * 1e3);
  report("memcpy of the packed bytes (one call)", kPacked, 2 * kPacked, pack_memcpy_us,
         pack_memcpy_gbs, 0);
  for (const auto& [name, items] :
       {std::pair<const char*, const std::vector<cuda::CopyItem>*>{"batched pack", &pack},
        {"batched unpack", &unpack}}) {
    for (double factor : {1.0, 0.5}) {
      const double us = median_us([&, items = items] {
        return cuda::batched_scale_copy(items->data(), items->size(), DataType::kFloat32, factor,
                                        nullptr);
      });
      report(std::string(name) + (factor == 1.0 ? "" : " scaled (x0.5)") + ", 200 x 64 KiB",
             kPacked, 2 * kPacked, us, pack_memcpy_gbs, kTarget);
    }
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return 0;
}
