// The builtin communicator's gather-list allreduce (allreduce_spans, shm_span_allreduce.h),
// across fork()ed processes on this host, N = 2..5: every dtype and op defined on it, spans of
// odd lengths (0 elements too) that cross the chunk and slice boundaries, split differently on
// every rank, in place and out of place, prescale and postscale, a rank contributing zeros
// without outputs (a joined rank). Each result must equal, bit for bit, what the packed path
// computes (scale_copy(prescale) into one buffer, the native allreduce, scale_copy(postscale)),
// and every rank must hold the same bits.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "hora/data_type.h"
#include "hora/reduce_op.h"
#include "kernels/kernels.h"
#include "tests/collectives/backends/builtin/builtin_test_util.h"

namespace hora {
namespace collectives {
namespace builtin_test {
namespace {

constexpr size_t kSlotBytes = 4096;  // tiny, to reach the many-chunk paths
constexpr size_t kSmallBytes = 256;

BuiltinOptions exchange_options() {
  BuiltinOptions o = test_options(true);
  o.shm_exchange_slot_bytes = kSlotBytes;
  o.shm_small_bytes = kSmallBytes;
  return o;
}

const DataType kDtypes[] = {DataType::kUint8,   DataType::kInt8,     DataType::kInt16,
                            DataType::kUint16,  DataType::kInt32,    DataType::kInt64,
                            DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                            DataType::kFloat64, DataType::kBool};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                         ReduceOp::kProduct};

// Pseudo-random bytes that are a valid value of every dtype once masked (bool: 0 or a byte;
// floats: finite, a few exponents, so sums round).
std::vector<uint8_t> make_input(int rank, size_t count, DataType dtype, uint32_t seed) {
  const size_t esize = data_type_bytes(dtype);
  std::vector<uint8_t> buf(count * esize);
  uint32_t x = 2166136261u ^ (seed * 16777619u) ^ static_cast<uint32_t>(rank * 7919);
  for (size_t i = 0; i < count; ++i) {
    x = x * 1664525u + 1013904223u;
    const double v = static_cast<double>((x >> 8) % 2001) / 64.0 - 15.6;
    uint8_t* p = buf.data() + i * esize;
    switch (dtype) {
      case DataType::kBool:
        *p = (x >> 20) % 3 == 0 ? 0 : static_cast<uint8_t>(1 + (x >> 24) % 200);
        break;
      case DataType::kFloat16: {
        uint16_t h = kernels::f32_to_f16(static_cast<float>(v));
        std::memcpy(p, &h, 2);
        break;
      }
      case DataType::kBFloat16: {
        uint16_t h = kernels::f32_to_bf16(static_cast<float>(v));
        std::memcpy(p, &h, 2);
        break;
      }
      case DataType::kFloat32: {
        float f = static_cast<float>(v * 1.37);
        std::memcpy(p, &f, 4);
        break;
      }
      case DataType::kFloat64: {
        double d = v * 1.37;
        std::memcpy(p, &d, 8);
        break;
      }
      default: {
        const uint64_t bits = (static_cast<uint64_t>(x) << 17) ^ (x >> 3);
        std::memcpy(p, &bits, esize);
        break;
      }
    }
  }
  return buf;
}

// Span lengths (elements) adding up to `total`, split differently per rank: zero-length spans,
// ones and the rest in odd pieces.
std::vector<size_t> split(size_t total, int rank) {
  std::vector<size_t> lengths = {0, 1};
  size_t left = total > 1 ? total - 1 : 0;
  if (total == 0) lengths = {0};
  size_t piece = 3 + static_cast<size_t>(rank) * 5;
  while (left > 0) {
    const size_t k = std::min(left, piece);
    lengths.push_back(k);
    lengths.push_back(0);
    left -= k;
    piece = piece * 3 + 1;
  }
  return lengths;
}

uint64_t fnv1a(const uint8_t* p, size_t bytes, uint64_t h) {
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

struct Case {
  DataType dtype;
  ReduceOp op;
  size_t total;
  bool in_place;
  double prescale, postscale;
  bool last_rank_joined;  // the last rank passes no inputs (zeros) and no outputs
};

std::string describe(const Case& c) {
  return std::string(data_type_name(c.dtype)) + " " + reduce_op_name(c.op) + " total " +
         std::to_string(c.total) + (c.in_place ? " in place" : "") + " prescale " +
         std::to_string(c.prescale) + " postscale " + std::to_string(c.postscale) +
         (c.last_rank_joined ? " last rank joined" : "");
}

Status run_case(Communicator& comm, const Case& c, uint32_t seed, uint64_t* hash) {
  const int n = comm.size(), rank = comm.rank();
  const Deadline deadline = Deadline::after(std::chrono::seconds(120));
  const size_t esize = data_type_bytes(c.dtype);
  const bool joined = c.last_rank_joined && rank == n - 1;
  const std::vector<uint8_t> input = make_input(rank, c.total, c.dtype, seed);

  // The packed path: what the spans must reproduce bit for bit.
  std::vector<uint8_t> want(c.total * esize);
  if (joined) {
    std::fill(want.begin(), want.end(), 0);
  } else {
    kernels::scale_copy(want.data(), input.data(), c.total, c.dtype, c.prescale);
  }
  const ReduceOp packed_op = c.op == ReduceOp::kAverage ? ReduceOp::kSum : c.op;
  const double post = c.op == ReduceOp::kAverage ? c.postscale * (1.0 / n) : c.postscale;
  HORA_RETURN_IF_ERROR(
      comm.allreduce(want.data(), want.data(), c.total, c.dtype, packed_op, deadline));
  kernels::scale(want.data(), c.total, c.dtype, post);

  // The spans, each in its own allocation with a guard byte after it.
  std::vector<std::vector<uint8_t>> ins, outs;
  std::vector<ReduceSpan> spans;
  size_t at = 0;
  for (size_t len : split(c.total, rank)) {
    ins.emplace_back(input.begin() + at * esize, input.begin() + (at + len) * esize);
    ins.back().push_back(0xEE);
    outs.emplace_back(len * esize + 1, 0xEE);
    at += len;
  }
  for (size_t i = 0; i < ins.size(); ++i) {
    ReduceSpan s;
    s.count = (ins[i].size() - 1) / esize;
    if (!joined) {
      s.in = ins[i].data();
      s.out = c.in_place ? ins[i].data() : outs[i].data();
    }
    spans.push_back(s);
  }
  HORA_RETURN_IF_ERROR(
      comm.allreduce_spans(spans, c.dtype, c.op, c.prescale, c.postscale, deadline));
  if (joined) return Status::OK();
  at = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    const std::vector<uint8_t>& got = c.in_place ? ins[i] : outs[i];
    const size_t bytes = spans[i].count * esize;
    if (got[bytes] != 0xEE)
      return Status::internal(describe(c) + ": span " + std::to_string(i) +
                              " written past its end");
    if (bytes > 0 && std::memcmp(got.data(), want.data() + at, bytes) != 0) {
      size_t bad = 0;
      while (got[bad] == want[at + bad]) ++bad;
      return Status::internal("rank " + std::to_string(rank) + " of " + std::to_string(n) + ": " +
                              describe(c) + ": span " + std::to_string(i) + " element " +
                              std::to_string((at + bad) / esize) + " differs from the packed path");
    }
    *hash = fnv1a(got.data(), bytes, *hash);
    at += bytes;
  }
  return Status::OK();
}

Status run_matrix(Communicator& comm, uint64_t* hash) {
  if (!comm.has_allreduce_spans())
    return Status::internal("the builtin communicator over shared memory has no allreduce_spans");
  *hash = 1469598103934665603ull;
  uint32_t seed = 1;
  for (DataType dtype : kDtypes) {
    const size_t chunk = kSlotBytes / data_type_bytes(dtype);
    for (ReduceOp op : kOps) {
      if (!is_reduce_op_defined(op, dtype)) continue;  // bool sum / average
      for (size_t total : {size_t{0}, size_t{1}, size_t{37}, chunk - 1, 3 * chunk + 5}) {
        for (int variant = 0; variant < 4; ++variant) {
          Case c{dtype, op, total, (variant & 1) != 0, 1.0, 1.0, variant == 3};
          if (variant == 2 && is_scale_defined(dtype, 0.3)) {
            c.prescale = 0.3;
            c.postscale = 1.7;
          }
          Status st = run_case(comm, c, seed++, hash);
          if (!st.ok()) return st.with_context(" (" + describe(c) + ")");
        }
      }
    }
  }
  return Status::OK();
}

class ShmSpanAllreduce : public ::testing::TestWithParam<int> {};

TEST_P(ShmSpanAllreduce, EveryDtypeOpSplitAndScaleIsBitwiseThePackedPath) {
  const int n = GetParam();
  auto results = run_processes(n, [n](int rank, Store& store) -> Status {
    HORA_ASSIGN_OR_RETURN(auto comm, make_builtin_communicator(rank, n, store, exchange_options()));
    uint64_t hash = 0;
    HORA_RETURN_IF_ERROR(run_matrix(*comm, &hash));
    // The last rank may have joined: it holds no results, and is compared with no one.
    return expect_same_hash(store, rank, rank == n - 1 ? 0 : n - 1, hash);
  });
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(results[r].exit_code, 0) << "rank " << r << ": " << results[r].message;
}

// A short path (one sync point) larger than the 16 KiB stack buffer it reduces through, so
// the vector is reduced in several pieces (shm_span_allreduce.cc).
TEST_P(ShmSpanAllreduce, AShortPathLargerThanItsBufferIsBitwiseThePackedPath) {
  const int n = GetParam();
  auto results = run_processes(n, [n](int rank, Store& store) -> Status {
    BuiltinOptions o = test_options(true);
    o.shm_exchange_slot_bytes = 64 * 1024;
    o.shm_small_bytes = 64 * 1024;
    HORA_ASSIGN_OR_RETURN(auto comm, make_builtin_communicator(rank, n, store, o));
    uint64_t hash = 1469598103934665603ull;
    uint32_t seed = 1;
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64}) {
      const size_t total = 60 * 1024 / data_type_bytes(dtype) + 3;  // 60 KiB: four pieces
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMax}) {
        for (int variant = 0; variant < 3; ++variant) {
          Case c{dtype, op, total, variant == 1, 1.0, 1.0, variant == 2};
          if (variant == 0) {
            c.prescale = 0.3;
            c.postscale = 1.7;
          }
          Status st = run_case(*comm, c, seed++, &hash);
          if (!st.ok()) return st.with_context(" (" + describe(c) + ")");
        }
      }
    }
    return expect_same_hash(store, rank, rank == n - 1 ? 0 : n - 1, hash);
  });
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(results[r].exit_code, 0) << "rank " << r << ": " << results[r].message;
}

INSTANTIATE_TEST_SUITE_P(Ranks, ShmSpanAllreduce, ::testing::Values(2, 3, 4, 5), rank_count_name);

}  // namespace
}  // namespace builtin_test
}  // namespace collectives
}  // namespace hora
