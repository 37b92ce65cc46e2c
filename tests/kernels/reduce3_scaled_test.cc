// reduce3_scaled against the kernels it stands for (reduce3, then scale, then a copy into the
// second output), bit for bit, for every ISA this CPU has x every dtype x every op defined on
// it: lengths around the register widths and unroll blocks, misaligned pointers, with and
// without the second output, the outputs aliasing the sources, and factors of 1, 1/2 and 1/3
// (where the dtype defines them).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/kernels.h"
#include "tests/kernels/isa_param.h"
#include "tests/kernels/kernel_reference.h"

namespace hora {
namespace kernels_test {
namespace {

using kernels::Isa;

constexpr size_t kCounts[] = {0, 1, 7, 15, 16, 17, 63, 64, 65, 129, 4099};

class Reduce3ScaledTest : public IsaDtypeOpTest {
 protected:
  std::vector<double> factors() const {
    std::vector<double> out;
    for (double f : {1.0, 0.5, 1.0 / 3.0})
      if (is_scale_defined(dtype(), f)) out.push_back(f);
    return out;
  }

  // What reduce3_scaled stands for: reduce3 into a fresh buffer, then scale it.
  std::vector<uint8_t> expected(const uint8_t* a, const uint8_t* b, size_t count, double factor) {
    std::vector<uint8_t> want(count * elem() + 1);
    kernels::reduce3(want.data(), a, b, count, dtype(), op());
    if (factor != 1.0) kernels::scale(want.data(), count, dtype(), factor);
    return want;
  }

  void expect_bytes(const uint8_t* got, const std::vector<uint8_t>& want, size_t count,
                    const std::string& what) {
    for (size_t i = 0; i < count; ++i) {
      if (std::memcmp(got + i * elem(), want.data() + i * elem(), elem()) != 0) {
        ADD_FAILURE() << what << ": count " << count << ", element " << i << " is "
                      << element_string(dtype(), got + i * elem()) << ", expected "
                      << element_string(dtype(), want.data() + i * elem());
        return;
      }
    }
  }
};

TEST_P(Reduce3ScaledTest, IsReduce3ThenScaleIntoBothOutputs) {
  for (double factor : factors()) {
    for (size_t count : kCounts) {
      const size_t bytes = count * elem();
      Buffer a(bytes, 1), b(bytes, 2), dst(bytes, 3), dst2(bytes, 0);
      fill_random(dtype(), a.data(), count, 41 + count);
      fill_random(dtype(), b.data(), count, 43 + count);
      const std::vector<uint8_t> want = expected(a.data(), b.data(), count, factor);
      const std::string what = "factor " + std::to_string(factor);
      kernels::reduce3_scaled(dst.data(), nullptr, a.data(), b.data(), count, dtype(), op(),
                              factor);
      expect_bytes(dst.data(), want, count, what + ", one output");
      std::memset(dst.data(), 0x5a, bytes);
      kernels::reduce3_scaled(dst.data(), dst2.data(), a.data(), b.data(), count, dtype(), op(),
                              factor);
      expect_bytes(dst.data(), want, count, what + ", first of two outputs");
      expect_bytes(dst2.data(), want, count, what + ", second of two outputs");
      if (HasFailure()) return;
    }
  }
}

// The outputs may alias the sources exactly: dst = a with dst2 = b, and dst = dst2 = b.
TEST_P(Reduce3ScaledTest, OutputsMayAliasTheSources) {
  for (double factor : factors()) {
    for (size_t count : {size_t{1}, size_t{65}, size_t{1000}}) {
      const size_t bytes = count * elem();
      Buffer a(bytes, 0), b(bytes, 4);
      fill_random(dtype(), a.data(), count, 47);
      fill_random(dtype(), b.data(), count, 53);
      const std::vector<uint8_t> a0(a.data(), a.data() + bytes), b0(b.data(), b.data() + bytes);
      const std::vector<uint8_t> want = expected(a0.data(), b0.data(), count, factor);
      kernels::reduce3_scaled(a.data(), b.data(), a.data(), b.data(), count, dtype(), op(), factor);
      expect_bytes(a.data(), want, count, "dst = a");
      expect_bytes(b.data(), want, count, "dst2 = b");
      std::memcpy(a.data(), a0.data(), bytes);
      std::memcpy(b.data(), b0.data(), bytes);
      kernels::reduce3_scaled(b.data(), b.data(), a.data(), b.data(), count, dtype(), op(), factor);
      expect_bytes(b.data(), want, count, "dst = dst2 = b");
      if (HasFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllPaths, Reduce3ScaledTest,
                         ::testing::Combine(::testing::ValuesIn(kAllIsas),
                                            ::testing::ValuesIn(kNonBoolDtypes),
                                            ::testing::Values(ReduceOp::kSum, ReduceOp::kMin,
                                                              ReduceOp::kMax, ReduceOp::kProduct)),
                         isa_dtype_op_name<Reduce3ScaledTest::ParamType>);

INSTANTIATE_TEST_SUITE_P(Bool, Reduce3ScaledTest, bool_reduce_params(),
                         isa_dtype_op_name<Reduce3ScaledTest::ParamType>);

// Bool's sum and average abort as reduce3's do (kernels_test.cc, ReduceDeathTest).

}  // namespace
}  // namespace kernels_test
}  // namespace hora
