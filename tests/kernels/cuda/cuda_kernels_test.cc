// The CUDA kernels against the CPU kernels (kernels/kernels.h), element by element and bit by
// bit, for every dtype and op: inputs are pseudo-random bit patterns (so every float class
// occurs: NaN, infinities, subnormals, signed zeros) with a prime count that leaves a tail.
// The one allowed difference is cuda_kernels.h's: where sum, product or scale make a NaN, the
// GPU's NaN need not carry the CPU's payload; both must be NaN. Needs a GPU (exit 77 without,
// tests/support/cuda_test_main.cc).
#include "kernels/cuda/cuda_kernels.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "tests/kernels/cuda/device_buffer.h"

namespace hora {
namespace kernels_test {
namespace {

constexpr size_t kCount = 100003;  // prime: no launch shape divides it

std::vector<uint8_t> random_bytes(size_t bytes, uint64_t seed) {
  std::vector<uint8_t> out(bytes);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < bytes; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = static_cast<uint8_t>(x >> 24);
  }
  return out;
}

bool is_nan(DataType dtype, const uint8_t* p) {
  switch (dtype) {
    case DataType::kFloat16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return (b & 0x7fff) > 0x7c00;
    }
    case DataType::kBFloat16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return (b & 0x7fff) > 0x7f80;
    }
    case DataType::kFloat32: {
      uint32_t b;
      std::memcpy(&b, p, 4);
      return (b & 0x7fffffffu) > 0x7f800000u;
    }
    case DataType::kFloat64: {
      uint64_t b;
      std::memcpy(&b, p, 8);
      return (b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    }
    default: return false;
  }
}

std::string hex(const uint8_t* p, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string s;
  for (size_t k = n; k-- > 0;) {
    s += kDigits[p[k] >> 4];
    s += kDigits[p[k] & 15];
  }
  return s;
}

// Expects equal bits, or NaN on both sides when `nan_payload_may_differ`.
void expect_same(DataType dtype, const std::vector<uint8_t>& cpu, const std::vector<uint8_t>& gpu,
                 bool nan_payload_may_differ, const std::string& what) {
  ASSERT_EQ(cpu.size(), gpu.size());
  const size_t elem = data_type_bytes(dtype);
  int reported = 0;
  for (size_t i = 0; i < cpu.size() / elem && reported < 5; ++i) {
    const uint8_t* c = cpu.data() + i * elem;
    const uint8_t* g = gpu.data() + i * elem;
    if (std::memcmp(c, g, elem) == 0) continue;
    if (nan_payload_may_differ && is_nan(dtype, c) && is_nan(dtype, g)) continue;
    ADD_FAILURE() << what << " " << data_type_name(dtype) << " element " << i << ": cpu 0x"
                  << hex(c, elem) << ", gpu 0x" << hex(g, elem);
    ++reported;
  }
}

const DataType kAllDtypes[] = {DataType::kUint8,   DataType::kInt8,     DataType::kInt16,
                               DataType::kUint16,  DataType::kInt32,    DataType::kInt64,
                               DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                               DataType::kFloat64, DataType::kBool};
const ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                            ReduceOp::kProduct};

bool defined(DataType dtype, ReduceOp op) {
  return !(dtype == DataType::kBool && (op == ReduceOp::kSum || op == ReduceOp::kAverage));
}

TEST(CudaKernels, Reduce3MatchesTheCpuForEveryDtypeAndOp) {
  for (DataType dtype : kAllDtypes) {
    const size_t bytes = kCount * data_type_bytes(dtype);
    const auto a = random_bytes(bytes, 1 + static_cast<uint64_t>(dtype));
    const auto b = random_bytes(bytes, 100 + static_cast<uint64_t>(dtype));
    DeviceBuffer da(bytes), db(bytes), dout(bytes);
    da.upload(a);
    db.upload(b);
    for (ReduceOp op : kAllOps) {
      if (!defined(dtype, op)) continue;
      std::vector<uint8_t> cpu(bytes);
      kernels::reduce3(cpu.data(), a.data(), b.data(), kCount, dtype, op);
      ASSERT_TRUE(
          kernels::cuda::reduce3(dout.get(), da.get(), db.get(), kCount, dtype, op, nullptr).ok());
      const bool arithmetic =
          op == ReduceOp::kSum || op == ReduceOp::kAverage || op == ReduceOp::kProduct;
      expect_same(dtype, cpu, dout.download(), arithmetic,
                  std::string("reduce3 ") + reduce_op_name(op));
    }
  }
}

TEST(CudaKernels, InPlaceReduceMatchesTheCpu) {
  for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16, DataType::kInt64}) {
    const size_t bytes = kCount * data_type_bytes(dtype);
    auto a = random_bytes(bytes, 7);
    const auto b = random_bytes(bytes, 8);
    DeviceBuffer da(bytes), db(bytes);
    da.upload(a);
    db.upload(b);
    ASSERT_TRUE(
        kernels::cuda::reduce(da.get(), db.get(), kCount, dtype, ReduceOp::kMax, nullptr).ok());
    kernels::reduce(a.data(), b.data(), kCount, dtype, ReduceOp::kMax);
    expect_same(dtype, a, da.download(), false, "in-place max");
  }
}

TEST(CudaKernels, ScaleMatchesTheCpu) {
  for (DataType dtype : kAllDtypes) {
    if (dtype == DataType::kBool) continue;
    const size_t bytes = kCount * data_type_bytes(dtype);
    const auto in = random_bytes(bytes, 31 + static_cast<uint64_t>(dtype));
    DeviceBuffer din(bytes), dout(bytes);
    din.upload(in);
    for (double factor : {0.5, -3.0, 1.0 / 3.0, 1.0, 1e-300}) {
      std::vector<uint8_t> cpu(bytes);
      kernels::scale_copy(cpu.data(), in.data(), kCount, dtype, factor);
      ASSERT_TRUE(
          kernels::cuda::scale_copy(dout.get(), din.get(), kCount, dtype, factor, nullptr).ok());
      expect_same(dtype, cpu, dout.download(), factor != 1.0, "scale by " + std::to_string(factor));
    }
  }
}

TEST(CudaKernels, CastsMatchTheCpuOnEveryHalfPattern) {
  std::vector<uint16_t> halves(65536);
  for (size_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<uint16_t>(i);
  const auto floats_raw = random_bytes(kCount * 4, 99);
  std::vector<float> floats(kCount);
  std::memcpy(floats.data(), floats_raw.data(), floats_raw.size());
  DeviceBuffer dh(halves.size() * 2), df(halves.size() * 4), dfl(kCount * 4), dout(kCount * 2);
  dh.upload(halves.data(), halves.size() * 2);
  dfl.upload(floats.data(), kCount * 4);
  for (bool bf16 : {false, true}) {
    std::vector<float> cpu_f(halves.size());
    std::vector<uint8_t> cpu_h(kCount * 2);
    auto* out_h = reinterpret_cast<uint16_t*>(cpu_h.data());
    auto* dev_f = reinterpret_cast<float*>(df.get());
    auto* dev_h = reinterpret_cast<uint16_t*>(dout.get());
    if (bf16) {
      kernels::cast_bf16_to_f32(cpu_f.data(), halves.data(), halves.size());
      kernels::cast_f32_to_bf16(out_h, floats.data(), kCount);
      ASSERT_TRUE(kernels::cuda::cast_bf16_to_f32(dev_f, reinterpret_cast<uint16_t*>(dh.get()),
                                                  halves.size(), nullptr)
                      .ok());
      ASSERT_TRUE(kernels::cuda::cast_f32_to_bf16(dev_h, reinterpret_cast<float*>(dfl.get()),
                                                  kCount, nullptr)
                      .ok());
    } else {
      kernels::cast_f16_to_f32(cpu_f.data(), halves.data(), halves.size());
      kernels::cast_f32_to_f16(out_h, floats.data(), kCount);
      ASSERT_TRUE(kernels::cuda::cast_f16_to_f32(dev_f, reinterpret_cast<uint16_t*>(dh.get()),
                                                 halves.size(), nullptr)
                      .ok());
      ASSERT_TRUE(kernels::cuda::cast_f32_to_f16(dev_h, reinterpret_cast<float*>(dfl.get()), kCount,
                                                 nullptr)
                      .ok());
    }
    std::vector<uint8_t> cpu_f_bytes(cpu_f.size() * 4);
    std::memcpy(cpu_f_bytes.data(), cpu_f.data(), cpu_f_bytes.size());
    const char* name = bf16 ? "bfloat16" : "float16";
    expect_same(DataType::kFloat32, cpu_f_bytes, df.download(), false,
                std::string(name) + " -> float32");
    expect_same(bf16 ? DataType::kBFloat16 : DataType::kFloat16, cpu_h, dout.download(), false,
                std::string("float32 -> ") + name);
  }
}

// 300 tensors (three launches) of assorted sizes, some of odd byte lengths and offsets, packed
// into one buffer and unpacked again, plain and with a pre-scale.
TEST(CudaKernels, BatchedCopyPacksAndUnpacksManyTensors) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kUint8}) {
    const size_t elem = data_type_bytes(dtype);
    std::vector<size_t> counts, offsets;
    size_t total = 0;
    for (size_t k = 0; k < 300; ++k) {
      counts.push_back(k % 7 == 0 ? 0 : 1 + (k * 37) % 4099);
      offsets.push_back(total);
      total += counts.back();
    }
    const auto in = random_bytes(total * elem, 5);
    DeviceBuffer tensors(total * elem), packed(total * elem), unpacked(total * elem);
    tensors.upload(in);
    for (double factor : {1.0, 0.5}) {
      std::vector<kernels::cuda::CopyItem> pack, unpack;
      for (size_t k = 0; k < counts.size(); ++k) {
        // Pack in reverse order so the packed layout differs from the source layout.
        const size_t dst_off = total - offsets[k] - counts[k];
        pack.push_back(
            {packed.get() + dst_off * elem, tensors.get() + offsets[k] * elem, counts[k]});
        unpack.push_back(
            {unpacked.get() + offsets[k] * elem, packed.get() + dst_off * elem, counts[k]});
      }
      ASSERT_TRUE(
          kernels::cuda::batched_scale_copy(pack.data(), pack.size(), dtype, factor, nullptr).ok());
      ASSERT_TRUE(
          kernels::cuda::batched_scale_copy(unpack.data(), unpack.size(), dtype, 1.0, nullptr)
              .ok());
      std::vector<uint8_t> expected(total * elem);
      kernels::scale_copy(expected.data(), in.data(), total, dtype, factor);
      expect_same(dtype, expected, unpacked.download(), factor != 1.0,
                  "pack/unpack x" + std::to_string(factor));
    }
  }
}

TEST(CudaKernels, ZeroCountsLaunchNothing) {
  EXPECT_TRUE(kernels::cuda::reduce3(nullptr, nullptr, nullptr, 0, DataType::kFloat32,
                                     ReduceOp::kSum, nullptr)
                  .ok());
  EXPECT_TRUE(kernels::cuda::scale(nullptr, 0, DataType::kInt32, 2.0, nullptr).ok());
  EXPECT_TRUE(kernels::cuda::batched_scale_copy(nullptr, 0, DataType::kInt32, 2.0, nullptr).ok());
}

}  // namespace
}  // namespace kernels_test
}  // namespace hora
