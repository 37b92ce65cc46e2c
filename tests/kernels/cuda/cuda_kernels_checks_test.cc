// What the CUDA kernels' host side decides before any launch, and how CUDA errors become
// Status; runs on every machine, with or without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_status.h"

namespace hora {
namespace kernels_test {
namespace {

using kernels::cuda::cuda_status;

TEST(CudaStatus, MapsTheErrorClasses) {
  EXPECT_TRUE(cuda_status(cudaSuccess, "x").ok());
  Status no_driver = cuda_status(cudaErrorInsufficientDriver, "cudaMalloc(64)");
  EXPECT_EQ(no_driver.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(no_driver.message().find("cudaMalloc(64): CUDA error 35"), std::string::npos)
      << no_driver.message();
  EXPECT_NE(no_driver.message().find("cudaErrorInsufficientDriver"), std::string::npos);
  EXPECT_EQ(cuda_status(cudaErrorNoDevice, "x").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(cuda_status(cudaErrorInvalidValue, "x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cuda_status(cudaErrorLaunchFailure, "x").code(), StatusCode::kInternal);
}

TEST(CudaKernelsChecks, BoolSumIsRefusedBeforeAnyLaunch) {
  Status s = kernels::cuda::reduce3(nullptr, nullptr, nullptr, 4, DataType::kBool, ReduceOp::kSum,
                                    nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("not defined for bool"), std::string::npos) << s.message();
  EXPECT_EQ(kernels::cuda::scale(nullptr, 4, DataType::kBool, 2.0, nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::cuda::batched_scale_copy(nullptr, 0, DataType::kBool, 0.5, nullptr).code(),
            StatusCode::kInvalidArgument);
}

TEST(CudaKernelsChecks, AValueOutsideTheDtypesIsRefused) {
  Status s = kernels::cuda::reduce3(nullptr, nullptr, nullptr, 4, static_cast<DataType>(200),
                                    ReduceOp::kSum, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
}

TEST(CudaKernelsChecks, MisalignedPointersAreRefused) {
  auto* odd = reinterpret_cast<void*>(uintptr_t{0x1002});
  Status s = kernels::cuda::reduce3(odd, odd, odd, 4, DataType::kFloat32, ReduceOp::kSum, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("not aligned to a float32 element"), std::string::npos) << s.message();
}

TEST(CudaKernelsChecks, WithoutADeviceALaunchFailsCleanly) {
  if (kernels::cuda::device_count().ok()) GTEST_SKIP() << "a CUDA device is present";
  Status s = kernels::cuda::reduce3(nullptr, nullptr, nullptr, 4, DataType::kFloat32,
                                    ReduceOp::kSum, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.to_string();
  EXPECT_NE(s.message().find("cuda reduce"), std::string::npos) << s.message();
  EXPECT_EQ(kernels::cuda::device_count().status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace kernels_test
}  // namespace hora
