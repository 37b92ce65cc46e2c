// kernels::copy against memcmp, for every ISA this CPU has: lengths around memcpy's hand-off
// (loops.h: kCopyVectorFrom) and the vector loop's block, destination and source offsets
// across a cache line, and guard bytes on both sides of the destination that must stay as
// they were.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "tests/kernels/isa_param.h"

namespace hora {
namespace kernels_test {
namespace {

constexpr size_t kLengths[] = {
    0, 1, 31, 255, 2047, 2048, 2049, 2175, 4159, (64u << 10) + 5, (size_t{1} << 20) + 3};
constexpr size_t kOffsets[] = {0, 1, 8, 16, 31, 32, 48, 63};
constexpr size_t kGuard = 64;
constexpr uint8_t kGuardByte = 0xa5;

std::vector<uint8_t> random_bytes(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(gen());
  return v;
}

// The first cache-line boundary at or after p.
template <typename T>
T* line_start(T* p) {
  return p + (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64;
}

using CopyTest = IsaTest;

TEST_P(CopyTest, CopiesEveryByteAndNothingAround) {
  for (size_t bytes : kLengths) {
    const std::vector<uint8_t> data = random_bytes(bytes + 128, static_cast<unsigned>(bytes));
    for (size_t dst_offset : kOffsets) {
      // The same offset in a line as dst (memcpy's case) and others (the vector loop's).
      for (size_t src_offset : {size_t{0}, size_t{16}, size_t{33}}) {
        std::vector<uint8_t> dst_store(bytes + 2 * kGuard + 128, kGuardByte);
        uint8_t* dst = line_start(dst_store.data()) + kGuard + dst_offset;
        const uint8_t* src = line_start(data.data()) + src_offset;
        kernels::copy(dst, src, bytes);
        const std::string where = std::to_string(bytes) + " bytes, dst offset " +
                                  std::to_string(dst_offset) + ", src offset " +
                                  std::to_string(src_offset);
        ASSERT_EQ(0, std::memcmp(dst, src, bytes)) << where;
        for (uint8_t* p = dst_store.data(); p < dst; ++p)
          ASSERT_EQ(kGuardByte, *p) << where << ": byte " << (dst - p) << " before dst written";
        for (uint8_t* p = dst + bytes; p < dst_store.data() + dst_store.size(); ++p)
          ASSERT_EQ(kGuardByte, *p)
              << where << ": byte " << (p - dst - bytes) << " after the end written";
      }
    }
  }
}

TEST_P(CopyTest, OntoItselfLeavesTheBytes) {
  std::vector<uint8_t> data = random_bytes(5000, 7);
  const std::vector<uint8_t> before = data;
  kernels::copy(data.data() + 3, data.data() + 3, 4000);
  EXPECT_EQ(before, data);
}

TEST_P(CopyTest, NoBytesReadNorWriteAnything) {
  std::vector<uint8_t> data(64, 7);
  kernels::copy(data.data(), nullptr, 0);
  kernels::copy(nullptr, data.data(), 0);
  EXPECT_EQ(std::vector<uint8_t>(64, 7), data);
}

INSTANTIATE_TEST_SUITE_P(AllIsas, CopyTest, ::testing::ValuesIn(kAllIsas), isa_param_name);

}  // namespace
}  // namespace kernels_test
}  // namespace hora
