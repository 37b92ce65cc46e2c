// The algorithm correctness matrix across processes: every hora algorithm, plus the backend's
// native collective where it has one, over the job's real communicator (builtin over shared
// memory or TCP, gloo, ...) under horarun, for every collective:
//
//   allreduce      ring, tree, rd, native  x every dtype x every op defined on it (bool: min,
//                  max, product) x count {0, 1, N-1, 1009}
//                  x in place / out of place
//   broadcast      pipelined, native       x every dtype x count {0, 1, N-1, 1009}
//                  x roots {0, N-1, count % N} x in place / out of place
//   allgatherv     ring, native            x every dtype x per-rank counts {all zero, all one,
//                  uneven with zeros, rank r gives r} x in place / out of place
//   reducescatter  ring, native            x every dtype x in place / out of place x
//                  every op defined on the dtype on even_split(1009) (the first count % N
//                  ranks get one more);
//                  even_split of {0, 1, N-1} and a split with empty blocks with one op per
//                  dtype, rotating through the ops (every op meets every shape)
//   alltoallv      pairwise, native        x every dtype x block scales {0, 1, 7, 1009}
//                  (out of place only: pairwise_alltoallv's contract)
//
// Inputs are closed-form in (rank, index) (tests/support/collective_checks.h): integers are
// compared exactly, floats within a tolerance from the dtype and N against a float64
// reference; allreduce outputs are hashed and compared with rank 0's on every rank (and
// broadcast/allgatherv outputs equal one expected buffer byte for byte on every rank, which
// is the same property).
//
// Reduced on purpose, to keep one (np, backend) run near a minute on two oversubscribed cores:
// the large count 1M+3 runs only for float32/sum (in and out of place, twice, the second run
// required to give the same bits) on every allreduce algorithm, for int32/sum and
// bfloat16/average on ring, and for float32 in each other collective (broadcast, allgatherv,
// reducescatter/sum, alltoallv with ~1M elements per rank). Tiny segments (7 elements) run for
// count 1009 with kSum (the first eight dtypes; allreduce out of place only), for broadcast's
// 1009 and for the uneven allgatherv, so the pipelined paths cut many segments; the large cases
// use 64 KiB segments (still many per block). Everything else uses the default segment size.
//
// int16, uint16 and bool (the dtypes added after the first eight) run a lighter matrix, so the
// run time grows by about a fifth rather than a half: their element sizes (2 and 1 bytes) are
// those of float16 and uint8, which already take every shape through the byte-moving paths,
// so what they add is the reductions. Allreduce: every op defined on them, counts {1, 1009}
// only; reducescatter: every op on even_split(1009) and the split with empty blocks;
// broadcast: count 1009 from root N-1; allgatherv: the uneven counts; alltoallv: scales
// {1, 1009}; and every case at the default segment size (the many-segment paths depend on
// the element size alone).
//
// Native collectives: probed with a count-0 call; kUnimplemented (the builtin backend) skips
// that test on every rank alike.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "collectives/scratch_pool.h"
#include "collectives/selector.h"
#include "hora/hora.h"
#include "tests/mp/mp_env.h"
#include "tests/support/collective_checks.h"

namespace hora {
namespace mp {
namespace {

using collectives::Algorithm;
using collectives::AlgorithmOptions;
using collectives::Communicator;
namespace ts = test_support;

constexpr size_t kPrime = 1009;
constexpr size_t kLarge = (size_t{1} << 20) + 3;
constexpr size_t kLargeSegmentBytes = 64 * 1024;
constexpr size_t kTinySegmentElements = 7;

// One pool per process, reused by every case, as a communicator's owner would.
collectives::ScratchPool& pool() {
  static collectives::ScratchPool instance;
  return instance;
}

AlgorithmOptions options_for(size_t segment_bytes) {
  AlgorithmOptions options;
  options.deadline = mp_deadline();
  options.scratch = &pool();
  if (segment_bytes > 0) options.segment_bytes = segment_bytes;
  return options;
}

bool is_light(DataType dtype);

// Tiny segments, except for the lighter matrix's dtypes (see the top of the file).
AlgorithmOptions tiny_segments(DataType dtype) {
  if (is_light(dtype)) return options_for(0);
  return options_for(kTinySegmentElements * data_type_bytes(dtype));
}

std::vector<DataType> all_dtypes() {
  std::vector<DataType> dtypes;
  for (int d = 0; d < kNumDataTypes; ++d) dtypes.push_back(static_cast<DataType>(d));
  return dtypes;
}

// Every op defined on `dtype` (bool: min, max, product).
std::vector<ReduceOp> ops_of(DataType dtype) {
  std::vector<ReduceOp> ops;
  for (int o = 0; o < kNumElementwiseReduceOps; ++o) {
    const ReduceOp op = static_cast<ReduceOp>(o);
    if (is_reduce_op_defined(op, dtype)) ops.push_back(op);
  }
  return ops;
}

// int16, uint16, bool: the lighter matrix (see the top of the file).
bool is_light(DataType dtype) {
  return dtype == DataType::kInt16 || dtype == DataType::kUint16 || dtype == DataType::kBool;
}

// {0, 1, N-1, prime}, without duplicates (N-1 is 0 or 1 for N <= 2).
std::vector<size_t> small_counts(int n) {
  std::set<size_t> counts = {0, 1, static_cast<size_t>(n - 1), kPrime};
  return std::vector<size_t>(counts.begin(), counts.end());
}

// True when the backend has this native collective: the count-0 probe is answered with
// anything but kUnimplemented. Every rank gets the same answer (same backend).
bool has_native(const Status& probe) { return probe.code() != StatusCode::kUnimplemented; }

std::string algo_param_name(const ::testing::TestParamInfo<Algorithm>& info) {
  return collectives::algorithm_name(info.param);
}

// ---------------------------------------------------------------------------------------
// allreduce

class AllreduceMatrix : public ::testing::TestWithParam<Algorithm> {};

TEST_P(AllreduceMatrix, EveryDtypeOpCountPlacement) {
  Communicator& c = mp_communicator();
  const Algorithm algorithm = GetParam();
  if (algorithm == Algorithm::kNative &&
      !has_native(
          c.allreduce(nullptr, nullptr, 0, DataType::kFloat32, ReduceOp::kSum, mp_deadline())))
    GTEST_SKIP() << "backend '" << c.backend_name() << "' has no native allreduce";
  auto run = [&](const ts::AllreduceCase& cs, const AlgorithmOptions& options, int repeats) {
    ts::AllreduceFn fn = [&](Communicator& comm, const void* in, void* out, size_t count,
                             DataType dtype, ReduceOp op) {
      return collectives::run_allreduce(algorithm, comm, in, out, count, dtype, op, options);
    };
    return ts::check_allreduce(c, fn, cs, repeats);
  };
  for (DataType dtype : all_dtypes()) {
    for (const ts::AllreduceCase& cs : ts::allreduce_cases(c.size(), dtype, false)) {
      if (is_light(dtype) && cs.count != 1 && cs.count != kPrime) continue;
      const bool tiny = cs.count == kPrime && cs.op == ReduceOp::kSum && !cs.in_place;
      Status s = run(cs, tiny ? tiny_segments(dtype) : options_for(0), 1);
      ASSERT_TRUE(s.ok()) << s.to_string();
    }
  }
  struct Large {
    DataType dtype;
    ReduceOp op;
    bool in_place;
    bool ring_only;
  };
  const Large larges[] = {{DataType::kFloat32, ReduceOp::kSum, false, false},
                          {DataType::kFloat32, ReduceOp::kSum, true, false},
                          {DataType::kInt32, ReduceOp::kSum, true, true},
                          {DataType::kBFloat16, ReduceOp::kAverage, false, true}};
  for (const Large& large : larges) {
    if (large.ring_only && algorithm != Algorithm::kRing) continue;
    ts::AllreduceCase cs;
    cs.count = kLarge;
    cs.dtype = large.dtype;
    cs.op = large.op;
    cs.in_place = large.in_place;
    const int repeats = large.dtype == DataType::kFloat32 ? 2 : 1;
    Status s = run(cs, options_for(kLargeSegmentBytes), repeats);
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
}

INSTANTIATE_TEST_SUITE_P(Mp, AllreduceMatrix,
                         ::testing::Values(Algorithm::kRing, Algorithm::kTree,
                                           Algorithm::kRecursiveDoubling, Algorithm::kNative),
                         algo_param_name);

// ---------------------------------------------------------------------------------------
// broadcast

class BroadcastMatrix : public ::testing::TestWithParam<Algorithm> {};

TEST_P(BroadcastMatrix, EveryDtypeCountRootPlacement) {
  Communicator& c = mp_communicator();
  const int n = c.size();
  const bool native = GetParam() == Algorithm::kNative;
  if (native && !has_native(c.broadcast(nullptr, 0, DataType::kFloat32, 0, mp_deadline())))
    GTEST_SKIP() << "backend '" << c.backend_name() << "' has no native broadcast";
  AlgorithmOptions options;
  ts::BroadcastFn fn = [&](Communicator& comm, const void* in, void* out, size_t count,
                           DataType dtype, int root) {
    if (!native)
      return collectives::pipelined_broadcast(comm, in, out, count, dtype, root, options);
    if (in != out && comm.rank() == root && count > 0)
      std::memcpy(out, in, count * data_type_bytes(dtype));
    return comm.broadcast(out, count, dtype, root, options.deadline);
  };
  for (DataType dtype : all_dtypes()) {
    for (size_t count : small_counts(n)) {
      if (is_light(dtype) && count != kPrime) continue;
      const std::set<int> roots = is_light(dtype)
                                      ? std::set<int>{n - 1}
                                      : std::set<int>{0, n - 1, static_cast<int>(count % n)};
      for (int root : roots) {
        for (bool in_place : {false, true}) {
          options = count == kPrime ? tiny_segments(dtype) : options_for(0);
          Status s = ts::check_broadcast(c, fn, count, dtype, root, in_place);
          ASSERT_TRUE(s.ok()) << s.to_string();
        }
      }
    }
  }
  for (bool in_place : {false, true}) {
    options = options_for(kLargeSegmentBytes);
    Status s = ts::check_broadcast(c, fn, kLarge, DataType::kFloat32, n / 2, in_place);
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
}

INSTANTIATE_TEST_SUITE_P(Mp, BroadcastMatrix,
                         ::testing::Values(Algorithm::kRing, Algorithm::kNative),
                         [](const ::testing::TestParamInfo<Algorithm>& info) {
                           return std::string(info.param == Algorithm::kNative ? "native"
                                                                               : "pipelined");
                         });

// ---------------------------------------------------------------------------------------
// allgatherv

class AllgathervMatrix : public ::testing::TestWithParam<Algorithm> {};

TEST_P(AllgathervMatrix, EveryDtypeUnevenAndZeroCountsPlacement) {
  Communicator& c = mp_communicator();
  const int n = c.size();
  const bool native = GetParam() == Algorithm::kNative;
  if (native && !has_native(c.allgatherv(nullptr, nullptr, std::vector<size_t>(n, 0),
                                         DataType::kFloat32, mp_deadline())))
    GTEST_SKIP() << "backend '" << c.backend_name() << "' has no native allgatherv";
  AlgorithmOptions options;
  ts::AllgathervFn fn = [&](Communicator& comm, const void* in, void* out,
                            const std::vector<size_t>& counts, DataType dtype) {
    if (native) return comm.allgatherv(in, out, counts, dtype, options.deadline);
    return collectives::ring_allgatherv(comm, in, out, counts, dtype, options);
  };
  std::vector<size_t> zeros(n, 0), ones(n, 1), uneven(n), by_rank(n);
  for (int r = 0; r < n; ++r) {
    uneven[r] = r % 2 == 1 ? 0 : kPrime + 17 * r;  // odd ranks contribute nothing
    by_rank[r] = r;                                // 0, 1, ..., N-1
  }
  for (DataType dtype : all_dtypes()) {
    for (bool in_place : {false, true}) {
      for (const auto* counts : {&zeros, &ones, &uneven, &by_rank}) {
        if (is_light(dtype) && counts != &uneven) continue;
        options = counts == &uneven ? tiny_segments(dtype) : options_for(0);
        Status s = ts::check_allgatherv(c, fn, *counts, dtype, in_place);
        ASSERT_TRUE(s.ok()) << s.to_string();
      }
    }
  }
  std::vector<size_t> large = collectives::even_split(kLarge, n);
  if (n > 1) large[n - 1] = 0;  // an empty block in a large gather
  for (bool in_place : {false, true}) {
    options = options_for(kLargeSegmentBytes);
    Status s = ts::check_allgatherv(c, fn, large, DataType::kFloat32, in_place);
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
}

INSTANTIATE_TEST_SUITE_P(Mp, AllgathervMatrix,
                         ::testing::Values(Algorithm::kRing, Algorithm::kNative), algo_param_name);

// ---------------------------------------------------------------------------------------
// reducescatter

class ReducescatterMatrix : public ::testing::TestWithParam<Algorithm> {};

TEST_P(ReducescatterMatrix, EveryDtypeOpUnevenSplitPlacement) {
  Communicator& c = mp_communicator();
  const int n = c.size();
  const bool native = GetParam() == Algorithm::kNative;
  if (native && !has_native(c.reducescatter(nullptr, nullptr, std::vector<size_t>(n, 0),
                                            DataType::kFloat32, ReduceOp::kSum, mp_deadline())))
    GTEST_SKIP() << "backend '" << c.backend_name() << "' has no native reducescatter";
  AlgorithmOptions options;
  ts::ReducescatterFn fn = [&](Communicator& comm, const void* in, void* out,
                               const std::vector<size_t>& counts, DataType dtype, ReduceOp op) {
    if (native) return comm.reducescatter(in, out, counts, dtype, op, options.deadline);
    return collectives::ring_reducescatter(comm, in, out, counts, dtype, op, options);
  };
  std::vector<size_t> with_empty(n);
  for (int r = 0; r < n; ++r) with_empty[r] = r % 2 == 0 ? 0 : 513 + r;
  const std::vector<DataType> dtypes = all_dtypes();
  for (size_t d = 0; d < dtypes.size(); ++d) {
    const DataType dtype = dtypes[d];
    for (bool in_place : {false, true}) {
      // Every op on the prime count, split unevenly.
      const std::vector<ReduceOp> ops = ops_of(dtype);
      for (ReduceOp op : ops) {
        options = op == ReduceOp::kSum ? tiny_segments(dtype) : options_for(0);
        Status s =
            ts::check_reducescatter(c, fn, collectives::even_split(kPrime, n), dtype, op, in_place);
        ASSERT_TRUE(s.ok()) << s.to_string();
      }
      // The other shapes with one op per dtype, rotating, so each op meets each shape.
      const ReduceOp op = ops[d % ops.size()];
      options = options_for(0);
      for (size_t count : small_counts(n)) {
        if (count == kPrime || is_light(dtype)) continue;
        Status s =
            ts::check_reducescatter(c, fn, collectives::even_split(count, n), dtype, op, in_place);
        ASSERT_TRUE(s.ok()) << s.to_string();
      }
      Status s = ts::check_reducescatter(c, fn, with_empty, dtype, op, in_place);
      ASSERT_TRUE(s.ok()) << s.to_string();
    }
  }
  for (bool in_place : {false, true}) {
    options = options_for(kLargeSegmentBytes);
    Status s = ts::check_reducescatter(c, fn, collectives::even_split(kLarge, n),
                                       DataType::kFloat32, ReduceOp::kSum, in_place);
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
}

INSTANTIATE_TEST_SUITE_P(Mp, ReducescatterMatrix,
                         ::testing::Values(Algorithm::kRing, Algorithm::kNative), algo_param_name);

// ---------------------------------------------------------------------------------------
// alltoallv

class AlltoallvMatrix : public ::testing::TestWithParam<Algorithm> {};

TEST_P(AlltoallvMatrix, EveryDtypeUnevenBlocks) {
  Communicator& c = mp_communicator();
  const int n = c.size();
  const bool native = GetParam() == Algorithm::kNative;
  const std::vector<size_t> none(n, 0);
  if (native &&
      !has_native(c.alltoallv(nullptr, none, nullptr, none, DataType::kFloat32, mp_deadline())))
    GTEST_SKIP() << "backend '" << c.backend_name() << "' has no native alltoallv";
  AlgorithmOptions options = options_for(0);
  ts::AlltoallvFn fn = [&](Communicator& comm, const void* in, const std::vector<size_t>& sc,
                           void* out, const std::vector<size_t>& rc, DataType dtype) {
    if (native) return comm.alltoallv(in, sc, out, rc, dtype, options.deadline);
    return collectives::pairwise_alltoallv(comm, in, sc, out, rc, dtype, options);
  };
  for (DataType dtype : all_dtypes()) {
    for (size_t scale : {size_t{0}, size_t{1}, size_t{7}, kPrime}) {
      if (is_light(dtype) && scale != 1 && scale != kPrime) continue;
      Status s = ts::check_alltoallv(c, fn, scale, dtype);
      ASSERT_TRUE(s.ok()) << s.to_string();
    }
  }
  // Blocks of 0..3 x scale elements: about 1.5 x scale x N per rank, ~1M in all.
  const size_t large_scale = kLarge / (2 * static_cast<size_t>(n)) + 1;
  Status s = ts::check_alltoallv(c, fn, large_scale, DataType::kFloat32);
  ASSERT_TRUE(s.ok()) << s.to_string();
}

INSTANTIATE_TEST_SUITE_P(Mp, AlltoallvMatrix,
                         ::testing::Values(Algorithm::kRing, Algorithm::kNative),
                         [](const ::testing::TestParamInfo<Algorithm>& info) {
                           return std::string(info.param == Algorithm::kNative ? "native"
                                                                               : "pairwise");
                         });

}  // namespace
}  // namespace mp
}  // namespace hora
