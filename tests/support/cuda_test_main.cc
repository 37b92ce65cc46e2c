// main() of the test binaries that need a GPU (CUDA kernels, NCCL on devices): when this
// process cannot use a CUDA device it prints why and exits 77, which CTest reports as a skip
// (SKIP_RETURN_CODE 77), so a machine without a GPU never counts these tests as passed.
// HORA_TEST_REQUIRE_GPU=1 turns that skip into a failure (scripts/gpu_check.sh sets it, so a
// GPU machine whose driver is broken cannot pass by skipping).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/cuda/cuda_kernels.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto devices = hora::kernels::cuda::device_count();
  if (!devices.ok()) {
    const char* require = std::getenv("HORA_TEST_REQUIRE_GPU");
    const bool required = require != nullptr && std::strcmp(require, "1") == 0;
    std::printf("%s: no usable CUDA device: %s\n", required ? "FAILED" : "SKIPPED",
                devices.status().to_string().c_str());
    return required ? 1 : 77;
  }
  return RUN_ALL_TESTS();
}
