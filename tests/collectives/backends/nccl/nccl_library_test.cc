// The real NCCL library, loaded lazily (nccl_library.h): it loads on a machine with NCCL
// installed, and ncclGetVersion answers through real_nccl_api() without a GPU.
#include "collectives/backends/nccl/nccl_library.h"

#include <gtest/gtest.h>

#include "collectives/backends/nccl/nccl_api.h"

namespace hora {
namespace collectives {
namespace nccl_backend {
namespace {

TEST(NcclLibrary, LoadsLazilyAndAnswersItsVersion) {
  const NcclLibrary* lib = nccl_library();
  ASSERT_NE(lib, nullptr) << nccl_load_error();
  int version = 0;
  ASSERT_EQ(real_nccl_api().get_version(&version), ncclSuccess);
  EXPECT_GE(version, 21800);  // NCCL 2.18 or newer: ncclCommInitRankConfig and ncclGetLastError
  EXPECT_STRNE(real_nccl_api().get_error_string(ncclInvalidArgument), "");
}

}  // namespace
}  // namespace nccl_backend
}  // namespace collectives
}  // namespace hora
