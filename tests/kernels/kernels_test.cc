// reduce / reduce3 against the independent reference (kernel_reference.h), for every ISA
// this CPU has x every dtype x every op defined on it: many lengths (around the register widths and
// unroll blocks, and one over a million), misaligned pointers, and dst aliasing a source.
#include "kernels/kernels.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "tests/kernels/isa_param.h"
#include "tests/kernels/kernel_reference.h"

namespace hora {
namespace kernels_test {
namespace {

using kernels::Isa;

constexpr size_t kLengths[] = {0, 1, 7, 8, 9, 63, 64, 65, (size_t{1} << 20) + 3};

class ReduceTest : public IsaDtypeOpTest {
 protected:
  // Expects out[i] == ref(a[i], b[i]) for i < count, naming the first mismatch.
  void expect_combined(const uint8_t* out, const uint8_t* a, const uint8_t* b, size_t count,
                       const std::string& what) {
    std::vector<uint8_t> want(elem());
    for (size_t i = 0; i < count; ++i) {
      ref_combine(dtype(), op(), a + i * elem(), b + i * elem(), want.data());
      if (!same_element(dtype(), want.data(), out + i * elem())) {
        ADD_FAILURE() << what << ": count " << count << ", element " << i << ": "
                      << element_string(dtype(), a + i * elem()) << " " << reduce_op_name(op())
                      << " " << element_string(dtype(), b + i * elem()) << " gave "
                      << element_string(dtype(), out + i * elem()) << ", expected "
                      << element_string(dtype(), want.data());
        return;
      }
    }
  }
};

// reduce with dst and src misaligned by 0, 1 element and 1 byte (dst and src differently).
TEST_P(ReduceTest, ReduceMatchesReference) {
  const size_t offsets[][2] = {{0, 0}, {elem(), elem()}, {1, 0}, {0, 1}, {3, 1}};
  for (size_t count : kLengths) {
    for (const auto& offset : offsets) {
      // The long length runs aligned and misaligned only, to keep the test short.
      if (count > 1000 && (offset[0] != 0 || offset[1] != 0) && offset[0] != 3) continue;
      const size_t bytes = count * elem();
      Buffer dst(bytes, offset[0]);
      Buffer src(bytes, offset[1]);
      fill_random(dtype(), dst.data(), count, 11 + count);
      fill_random(dtype(), src.data(), count, 17 + count);
      const std::vector<uint8_t> before(dst.data(), dst.data() + bytes);
      kernels::reduce(dst.data(), src.data(), count, dtype(), op());
      expect_combined(
          dst.data(), before.data(), src.data(), count,
          "reduce, offsets " + std::to_string(offset[0]) + "/" + std::to_string(offset[1]));
      if (HasFailure()) return;
    }
  }
}

TEST_P(ReduceTest, Reduce3MatchesReference) {
  for (size_t count : kLengths) {
    const size_t bytes = count * elem();
    Buffer a(bytes, 1), b(bytes, 2), dst(bytes, 3);
    fill_random(dtype(), a.data(), count, 23 + count);
    fill_random(dtype(), b.data(), count, 29 + count);
    kernels::reduce3(dst.data(), a.data(), b.data(), count, dtype(), op());
    expect_combined(dst.data(), a.data(), b.data(), count, "reduce3");
    if (HasFailure()) return;
  }
}

// dst aliasing exactly: reduce(x, x), reduce3(a, a, b) and reduce3(b, a, b).
TEST_P(ReduceTest, AliasedDst) {
  for (size_t count : {size_t{1}, size_t{65}, size_t{1000}}) {
    const size_t bytes = count * elem();
    Buffer a(bytes, 0), b(bytes, 0);
    fill_random(dtype(), a.data(), count, 31);
    fill_random(dtype(), b.data(), count, 37);
    const std::vector<uint8_t> a0(a.data(), a.data() + bytes), b0(b.data(), b.data() + bytes);

    kernels::reduce(a.data(), a.data(), count, dtype(), op());
    expect_combined(a.data(), a0.data(), a0.data(), count, "reduce(x, x)");
    std::memcpy(a.data(), a0.data(), bytes);
    kernels::reduce3(a.data(), a.data(), b.data(), count, dtype(), op());
    expect_combined(a.data(), a0.data(), b0.data(), count, "reduce3(a, a, b)");
    std::memcpy(a.data(), a0.data(), bytes);
    kernels::reduce3(b.data(), a.data(), b.data(), count, dtype(), op());
    expect_combined(b.data(), a0.data(), b0.data(), count, "reduce3(b, a, b)");
    if (HasFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(AllPaths, ReduceTest,
                         ::testing::Combine(::testing::ValuesIn(kAllIsas),
                                            ::testing::ValuesIn(kNonBoolDtypes),
                                            ::testing::Values(ReduceOp::kSum, ReduceOp::kAverage,
                                                              ReduceOp::kMin, ReduceOp::kMax,
                                                              ReduceOp::kProduct)),
                         isa_dtype_op_name<ReduceTest::ParamType>);

INSTANTIATE_TEST_SUITE_P(Bool, ReduceTest, bool_reduce_params(),
                         isa_dtype_op_name<ReduceTest::ParamType>);

// Sum and average on bool are a caller's bug (refused before the kernels by check_reduce_op):
// the kernels abort with a message that names the op and the dtype, even for count 0.
TEST(ReduceDeathTest, BoolSumAndAverageAbort) {
  uint8_t a[4] = {0, 1, 1, 0}, b[4] = {1, 1, 0, 0};
  EXPECT_DEATH(kernels::reduce(a, b, 4, DataType::kBool, ReduceOp::kSum),
               "reduce op sum is not defined for bool");
  EXPECT_DEATH(kernels::reduce3(a, a, b, 0, DataType::kBool, ReduceOp::kAverage),
               "reduce op average is not defined for bool");
  EXPECT_DEATH(kernels::reduce3_scaled(a, nullptr, a, b, 0, DataType::kBool, ReduceOp::kSum, 1.0),
               "reduce op sum is not defined for bool");
}

}  // namespace
}  // namespace kernels_test
}  // namespace hora
