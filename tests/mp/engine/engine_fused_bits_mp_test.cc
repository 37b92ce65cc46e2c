// Fused allreduce buckets through the engine, bit for bit: every dtype x op the engine fuses,
// tensors of odd sizes (0 elements too) in one group, with and without scale factors. The
// fused result (reduced where the tensors lie when the backend can: HORA_FUSION_IN_PLACE, the
// default) must equal the packed fusion buffer's (HORA_FUSION_IN_PLACE=0) and each tensor
// reduced alone (unfused) bit for bit, and every rank must hold the same bits. A step of
// mixed dtypes enqueued one by one is checked against the unfused results too.
//
// Unfused vs fused: at 3 ranks or more the selector may pick another algorithm for a lone small
// tensor than for the bucket (recursive doubling adds (a + b) + (c + d)), so float sums,
// averages and products may round differently there; those comparisons are left out (the
// fused-vs-packed and across-rank ones stay). Integer and min/max results must always agree.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/context.h"
#include "core/context_access.h"
#include "hora/data_type.h"
#include "hora/hora.h"
#include "hora/reduce_op.h"
#include "kernels/kernels.h"

namespace hora {
namespace {

const DataType kDtypes[] = {DataType::kUint8,   DataType::kInt8,     DataType::kInt16,
                            DataType::kUint16,  DataType::kInt32,    DataType::kInt64,
                            DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                            DataType::kFloat64, DataType::kBool};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                         ReduceOp::kProduct};
const size_t kCounts[] = {0, 1, 3, 17, 1000, 0, 4099, 70001};

struct Scales {
  double pre, post;
};
const Scales kScales[] = {{1.0, 1.0}, {0.3, 1.7}};

// Pseudo-random, valid in every dtype (floats finite and never 0, bool 0 or a byte).
std::vector<uint8_t> make_input(int rank, size_t count, DataType dtype, uint32_t seed) {
  const size_t esize = data_type_bytes(dtype);
  std::vector<uint8_t> buf(count * esize + 8, 0);
  uint32_t x = 2166136261u ^ (seed * 16777619u) ^ static_cast<uint32_t>(rank * 7919);
  for (size_t i = 0; i < count; ++i) {
    x = x * 1664525u + 1013904223u;
    const double v = static_cast<double>((x >> 8) % 2001) / 64.0 - 15.6;
    uint8_t* p = buf.data() + i * esize;
    if (dtype == DataType::kBool) {
      *p = (x >> 20) % 3 == 0 ? 0 : static_cast<uint8_t>(1 + (x >> 24) % 200);
    } else if (dtype == DataType::kFloat16) {
      const uint16_t h = kernels::f32_to_f16(static_cast<float>(v));
      std::memcpy(p, &h, 2);
    } else if (dtype == DataType::kBFloat16) {
      const uint16_t h = kernels::f32_to_bf16(static_cast<float>(v));
      std::memcpy(p, &h, 2);
    } else if (dtype == DataType::kFloat32) {
      const float f = static_cast<float>(v * 1.37);
      std::memcpy(p, &f, 4);
    } else if (dtype == DataType::kFloat64) {
      const double d = v * 1.37;
      std::memcpy(p, &d, 8);
    } else {
      const uint64_t bits = (static_cast<uint64_t>(x) << 17) ^ (x >> 3);
      std::memcpy(p, &bits, esize);
    }
  }
  return buf;
}

TensorView flat(std::vector<uint8_t>& buf, DataType dtype, size_t count) {
  return TensorView::flat(buf.data(), dtype, static_cast<int64_t>(count)).value();
}

bool order_sensitive(DataType dtype, ReduceOp op) {
  return is_floating(dtype) &&
         (op == ReduceOp::kSum || op == ReduceOp::kAverage || op == ReduceOp::kProduct);
}

// Whether fused buckets are reduced in place here (the builtin backend over shared memory):
// the in-place and packed runs then use the same native allreduce, whereas elsewhere both
// runs pack and the selector (calibrated at each init) may pick another algorithm for the
// second, which may round float sums differently at 3 ranks or more.
bool in_place_possible() { return detail::context()->communicator().has_allreduce_spans(); }

struct Case {
  DataType dtype;
  ReduceOp op;
  Scales scales;
  uint32_t seed;
};

std::vector<Case> cases() {
  std::vector<Case> all;
  uint32_t seed = 1;
  for (DataType dtype : kDtypes)
    for (ReduceOp op : kOps) {
      if (!is_reduce_op_defined(op, dtype)) continue;
      for (const Scales& s : kScales) {
        if (!is_scale_defined(dtype, s.pre) || !is_scale_defined(dtype, s.post)) continue;
        all.push_back({dtype, op, s, seed++});
      }
    }
  return all;
}

std::string describe(const Case& c) {
  return std::string(data_type_name(c.dtype)) + " " + reduce_op_name(c.op) + " x" +
         std::to_string(c.scales.pre) + " x" + std::to_string(c.scales.post);
}

// The outputs of every tensor of case `c`: fused in one group (grouped) or one at a time.
std::vector<std::vector<uint8_t>> run(const Case& c, bool grouped, const std::string& tag) {
  const std::string prefix = tag + "/" + std::to_string(c.seed) + "/";
  std::vector<std::vector<uint8_t>> ins, outs;
  std::vector<std::string> names;
  std::vector<TensorView> in_views, out_views;
  for (size_t t = 0; t < sizeof kCounts / sizeof kCounts[0]; ++t) {
    ins.push_back(make_input(rank(), kCounts[t], c.dtype, c.seed * 31 + t));
    outs.emplace_back(ins.back().size(), 0xEE);
    names.push_back(prefix + std::to_string(t));
  }
  for (size_t t = 0; t < ins.size(); ++t) {
    in_views.push_back(flat(ins[t], c.dtype, kCounts[t]));
    // Even tensors in place, odd ones out of place.
    out_views.push_back(t % 2 == 0 ? in_views.back() : flat(outs[t], c.dtype, kCounts[t]));
  }
  if (grouped) {
    Status s =
        grouped_allreduce_async(names, in_views, out_views, c.op, c.scales.pre, c.scales.post)
            .wait();
    EXPECT_TRUE(s.ok()) << describe(c) << ": " << s.to_string();
  } else {
    for (size_t t = 0; t < ins.size(); ++t) {
      Status s = allreduce(names[t], in_views[t], out_views[t], c.op, c.scales.pre, c.scales.post);
      EXPECT_TRUE(s.ok()) << describe(c) << ": " << s.to_string();
    }
  }
  for (size_t t = 0; t < ins.size(); ++t) {
    if (t % 2 == 0) outs[t] = ins[t];
    outs[t].resize(kCounts[t] * data_type_bytes(c.dtype) + 8);
    for (size_t b = kCounts[t] * data_type_bytes(c.dtype); b < outs[t].size(); ++b)
      EXPECT_EQ(outs[t][b], t % 2 == 0 ? 0 : 0xEE) << describe(c) << ": written past tensor " << t;
  }
  return outs;
}

// Every rank holds the same bits: a digest of everything, allreduced with min and max.
void expect_same_bits_on_every_rank(const std::vector<std::vector<std::vector<uint8_t>>>& all) {
  uint64_t h = 1469598103934665603ull;
  for (const auto& c : all)
    for (const auto& t : c)
      for (uint8_t b : t) h = (h ^ b) * 1099511628211ull;
  int64_t lo = static_cast<int64_t>(h >> 1), hi = lo;
  auto v = [](int64_t& x) { return TensorView::flat(&x, DataType::kInt64, 1).value(); };
  ASSERT_TRUE(allreduce("bits.min", v(lo), v(lo), ReduceOp::kMin).ok());
  ASSERT_TRUE(allreduce("bits.max", v(hi), v(hi), ReduceOp::kMax).ok());
  EXPECT_EQ(lo, hi) << "ranks hold different bits";
}

// Re-initialises hora with `settings`.
void reinit(std::vector<std::pair<std::string, std::string>> settings) {
  ASSERT_TRUE(shutdown().ok());
  InitOptions options;
  options.settings = std::move(settings);
  ASSERT_TRUE(init(options).ok());
}

TEST(EngineFusedBitsMp, FusedEqualsPackedAndUnfusedBitwise) {
  const std::vector<Case> all = cases();
  std::vector<std::vector<std::vector<uint8_t>>> fused, unfused, packed;
  for (const Case& c : all) unfused.push_back(run(c, false, "unfused"));
  expect_same_bits_on_every_rank(unfused);
  // In place, both fused runs take the native allreduce (the in-place path's condition), so
  // the selector cannot pick another algorithm for the packed run.
  const bool in_place = in_place_possible();
  std::vector<std::pair<std::string, std::string>> settings;
  if (in_place) settings.emplace_back("HORA_ALLREDUCE_ALGO", "native");
  reinit(settings);
  for (const Case& c : all) fused.push_back(run(c, true, "fused"));
  expect_same_bits_on_every_rank(fused);
  settings.emplace_back("HORA_FUSION_IN_PLACE", "0");
  reinit(settings);
  for (const Case& c : all) packed.push_back(run(c, true, "packed"));
  expect_same_bits_on_every_rank(packed);
  reinit({});
  for (size_t k = 0; k < all.size(); ++k) {
    const Case& c = all[k];
    for (size_t t = 0; t < fused[k].size(); ++t) {
      if (size() >= 3 && order_sensitive(c.dtype, c.op) && !in_place) continue;
      EXPECT_TRUE(fused[k][t] == packed[k][t])
          << describe(c) << " tensor " << t << " (" << kCounts[t] << " elements): fused in place "
          << "differs from the packed fusion buffer";
      if (size() >= 3 && order_sensitive(c.dtype, c.op)) continue;
      EXPECT_TRUE(fused[k][t] == unfused[k][t])
          << describe(c) << " tensor " << t << " (" << kCounts[t] << " elements): fused differs "
          << "from the tensor reduced alone";
    }
  }
}

// One step of float32, int32 and float16 tensors (and an empty one) enqueued one by one, then
// waited: the planner makes a bucket per dtype, each equal to the tensors reduced alone.
TEST(EngineFusedBitsMp, MixedDtypesInOneStep) {
  const DataType dtypes[] = {DataType::kFloat32, DataType::kInt32, DataType::kFloat16};
  const size_t counts[] = {5, 4099, 0, 70001, 1, 333};
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kAverage}) {
    std::vector<std::vector<uint8_t>> step, alone;
    std::vector<DataType> types;
    std::vector<Handle> handles;
    int k = 0;
    for (size_t count : counts)
      for (DataType dtype : dtypes) {
        step.push_back(make_input(rank(), count, dtype, 900 + k));
        alone.push_back(step.back());
        types.push_back(dtype);
        ++k;
      }
    for (size_t i = 0; i < step.size(); ++i) {
      const size_t count = counts[i / 3];
      handles.push_back(allreduce_async("mixed/" + std::to_string(i),
                                        flat(step[i], types[i], count),
                                        flat(step[i], types[i], count), op));
    }
    for (Handle& h : handles) ASSERT_TRUE(h.wait().ok()) << h.wait().to_string();
    for (size_t i = 0; i < alone.size(); ++i) {
      const size_t count = counts[i / 3];
      ASSERT_TRUE(allreduce("alone/" + std::to_string(i), flat(alone[i], types[i], count),
                            flat(alone[i], types[i], count), op)
                      .ok());
      if (size() >= 3 && order_sensitive(types[i], op)) continue;
      EXPECT_TRUE(step[i] == alone[i])
          << reduce_op_name(op) << " tensor " << i << " (" << data_type_name(types[i]) << ", "
          << count << " elements) differs from the tensor reduced alone";
    }
  }
}

}  // namespace
}  // namespace hora

namespace hora {
namespace {

// Every rank but `last` joins; `last` then reduces a fused group and a lone tensor, each large
// enough for the chunked shared-memory path (and one of 0 elements), to which the joined ranks
// contribute zeros: the sums are `last`'s own values on every path.
TEST(EngineFusedBitsMp, JoinedRanksContributeZerosToFusedAndLoneBuckets) {
  const int r = rank(), n = size();
  if (n < 2) GTEST_SKIP() << "needs a rank that joins";
  const int last = n - 1;
  if (r == last) {
    const size_t counts[] = {70001, 0, 3, 300001};
    std::vector<std::vector<float>> xs;
    std::vector<std::string> names;
    std::vector<TensorView> views;
    for (size_t t = 0; t < 4; ++t) {
      xs.emplace_back(counts[t] + 1);
      for (size_t i = 0; i < xs[t].size(); ++i) xs[t][i] = static_cast<float>(i % 13) + 0.5f;
      names.push_back("joined.group." + std::to_string(t));
    }
    for (size_t t = 0; t < 4; ++t)
      views.push_back(
          TensorView::flat(xs[t].data(), DataType::kFloat32, static_cast<int64_t>(counts[t]))
              .value());
    ASSERT_TRUE(grouped_allreduce_async(names, views, views, ReduceOp::kSum).wait().ok());
    std::vector<float> lone(200001);
    for (size_t i = 0; i < lone.size(); ++i) lone[i] = static_cast<float>(i % 5) - 2.0f;
    ASSERT_TRUE(
        allreduce(
            "joined.lone",
            TensorView::flat(lone.data(), DataType::kFloat32, static_cast<int64_t>(lone.size()))
                .value(),
            TensorView::flat(lone.data(), DataType::kFloat32, static_cast<int64_t>(lone.size()))
                .value(),
            ReduceOp::kSum)
            .ok());
    for (size_t t = 0; t < 4; ++t)
      for (size_t i = 0; i < counts[t]; ++i)
        ASSERT_EQ(xs[t][i], static_cast<float>(i % 13) + 0.5f) << names[t] << "[" << i << "]";
    for (size_t i = 0; i < lone.size(); ++i)
      ASSERT_EQ(lone[i], static_cast<float>(i % 5) - 2.0f) << "joined.lone[" << i << "]";
  }
  StatusOr<int> j = join();
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  EXPECT_EQ(*j, last);
}

}  // namespace
}  // namespace hora
