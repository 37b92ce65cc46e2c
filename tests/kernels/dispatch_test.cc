// ISA selection: names, support, select_isa's contract.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "kernels/kernels.h"
#include "tests/kernels/isa_param.h"

namespace hora {
namespace kernels_test {
namespace {

using kernels::Isa;

TEST(DispatchTest, Names) {
  EXPECT_EQ(std::string(kernels::isa_name(Isa::kScalar)), "scalar");
  EXPECT_EQ(std::string(kernels::isa_name(Isa::kAvx2)), "avx2");
  EXPECT_EQ(std::string(kernels::isa_name(Isa::kAvx512)), "avx512");
}

TEST(DispatchTest, BestIsSupportedAndDefault) {
  EXPECT_TRUE(kernels::isa_supported(Isa::kScalar));
  EXPECT_TRUE(kernels::isa_supported(kernels::best_isa()));
  // AVX-512 implies AVX2 here (dispatch requires both).
  if (kernels::isa_supported(Isa::kAvx512)) {
    EXPECT_TRUE(kernels::isa_supported(Isa::kAvx2));
  }
  EXPECT_EQ(kernels::current_isa(), kernels::best_isa());
}

TEST(DispatchTest, SelectChangesOnlyWhenSupported) {
  for (Isa isa : kAllIsas) {
    ASSERT_TRUE(kernels::select_isa(Isa::kScalar));
    const bool supported = kernels::isa_supported(isa);
    EXPECT_EQ(kernels::select_isa(isa), supported) << kernels::isa_name(isa);
    EXPECT_EQ(kernels::current_isa(), supported ? isa : Isa::kScalar) << kernels::isa_name(isa);
    if (!supported) std::printf("note: this CPU lacks %s\n", kernels::isa_name(isa));
  }
  kernels::select_isa(kernels::best_isa());
}

}  // namespace
}  // namespace kernels_test
}  // namespace hora
