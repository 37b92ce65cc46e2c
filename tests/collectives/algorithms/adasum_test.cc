// adasum_allreduce over in-process ranks (tests/support/multi_rank.h): N = 1..6 (6: two folded
// pairs), eager and rendezvous sends, the default segments and tiny ones (many segments per
// level), every float dtype, a fused buffer of several tensors (some shorter than N, one
// empty, one zero on a rank) against the float64 reference tree, and every rank's bits equal.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "tests/support/adasum_reference.h"
#include "tests/support/collective_checks.h"
#include "tests/support/multi_rank.h"

namespace hora {
namespace collectives {
namespace {

using test_support::SendMode;
using test_support::Vec;
namespace ts = test_support;

std::vector<Vec> inputs_of(int rank, DataType dtype, const std::vector<size_t>& counts) {
  std::mt19937_64 rng(77 + static_cast<uint64_t>(rank));
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<Vec> tensors;
  std::vector<uint8_t> cell(8);
  for (size_t t = 0; t < counts.size(); ++t) {
    Vec v(counts[t]);
    for (double& x : v) {
      // Rounded to the dtype: what the rank holds.
      ts::store_value(cell.data(), 0, dtype, (t == 2 && rank == 0) ? 0.0 : normal(rng));
      x = ts::load_value(cell.data(), 0, dtype);
    }
    tensors.push_back(v);
  }
  return tensors;
}

struct Case {
  int n;
  SendMode mode;
  size_t segment_bytes;
};

void run_case(const Case& c, DataType dtype) {
  const std::vector<size_t> counts = {257, 1, 33, 0, static_cast<size_t>(c.n) + 1};
  std::vector<std::vector<uint8_t>> results(c.n);
  std::mutex mu;
  const Status s = test_support::run_ranks(
      c.n,
      [&](Communicator& comm) -> Status {
        const std::vector<Vec> mine = inputs_of(comm.rank(), dtype, counts);
        std::vector<uint8_t> buf;
        size_t at = 0;
        for (const Vec& t : mine) {
          buf.resize(buf.size() + t.size() * data_type_bytes(dtype));
          for (double x : t) ts::store_value(buf.data(), at++, dtype, x);
        }
        AlgorithmOptions options;
        options.deadline = Deadline::after_seconds(30);
        options.segment_bytes = c.segment_bytes;
        HORA_RETURN_IF_ERROR(
            adasum_allreduce(comm, buf.data(), buf.data(), counts, dtype, options));
        std::lock_guard<std::mutex> lock(mu);
        results[comm.rank()] = buf;
        return Status::OK();
      },
      c.mode);
  const std::string what = "n " + std::to_string(c.n) + " " + data_type_name(dtype) + " segment " +
                           std::to_string(c.segment_bytes);
  ASSERT_TRUE(s.ok()) << what << ": " << s.to_string();
  for (int r = 1; r < c.n; ++r) EXPECT_EQ(results[r], results[0]) << what << " rank " << r;
  const double tol = dtype == DataType::kFloat64   ? 1e-12
                     : dtype == DataType::kFloat32 ? 1e-5
                     : dtype == DataType::kFloat16 ? 1e-2
                                                   : 5e-2;
  size_t at = 0;
  for (size_t t = 0; t < counts.size(); ++t) {
    std::vector<Vec> xs;
    for (int r = 0; r < c.n; ++r) xs.push_back(inputs_of(r, dtype, counts)[t]);
    const Vec want = ts::adasum_tree(xs);
    double scale = 1;
    for (double v : want) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < want.size(); ++i, ++at)
      ASSERT_NEAR(ts::load_value(results[0].data(), at, dtype), want[i], tol * scale)
          << what << " tensor " << t << " element " << i;
  }
}

TEST(AdasumAllreduce, MatchesTheReferenceTreeAndIsIdenticalOnEveryRank) {
  for (int n = 1; n <= 6; ++n)
    for (SendMode mode : {SendMode::kEager, SendMode::kRendezvous})
      for (size_t segment : {size_t{512} * 1024, size_t{24}})
        for (DataType dtype :
             {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64})
          run_case({n, mode, segment}, dtype);
}

TEST(AdasumAllreduce, RefusesIntegersOnEveryRank) {
  const Status s = test_support::run_ranks(3, [](Communicator& comm) -> Status {
    std::vector<int64_t> v(5, 1);
    Status r =
        adasum_allreduce(comm, v.data(), v.data(), v.size(), DataType::kInt64, AlgorithmOptions());
    if (r.code() != StatusCode::kInvalidArgument)
      return Status::internal("expected kInvalidArgument, got " + r.to_string());
    return Status::OK();
  });
  EXPECT_TRUE(s.ok()) << s.to_string();
}

}  // namespace
}  // namespace collectives
}  // namespace hora
