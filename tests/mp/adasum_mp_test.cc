// Adasum allreduce (collectives/algorithms/adasum.cc) over the job's real communicator under
// horarun, at every rank count the suite runs (1..5: powers of two and the folded sizes), for
// float16, bfloat16, float32 and float64: orthogonal vectors give their sum, identical vectors
// give the vector, parallel vectors at a power of two give their average, and random
// vectors (several tensors fused in one buffer, some shorter than the rank count, one empty)
// match the float64 reference tree of tests/support/adasum_reference.h per tensor. Every
// rank's result is compared bit for bit with rank 0's. Integer dtypes and the elementwise
// collectives are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "collectives/selector.h"
#include "tests/mp/mp_env.h"
#include "tests/support/adasum_reference.h"
#include "tests/support/collective_checks.h"

namespace hora {
namespace mp {
namespace {

using collectives::AlgorithmOptions;
using collectives::Communicator;
using test_support::Vec;
namespace ts = test_support;

const DataType kFloatTypes[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                DataType::kFloat64};

AlgorithmOptions options() {
  AlgorithmOptions o;
  o.deadline = mp_deadline();
  return o;
}

// Relative tolerance of one result element against the float64 reference: a few roundings
// of the dtype per tree level.
double tolerance(DataType dtype, int n) {
  const double eps = dtype == DataType::kFloat16    ? 1e-3
                     : dtype == DataType::kBFloat16 ? 8e-3
                     : dtype == DataType::kFloat32  ? 1e-6
                                                    : 1e-14;
  return 4 * eps * (1 + std::log2(n + 1.0));
}

// Rounds v to the dtype (what the rank holds).
Vec rounded(const Vec& v, DataType dtype) {
  std::vector<uint8_t> buf(v.size() * data_type_bytes(dtype));
  Vec out(v.size());
  for (size_t i = 0; i < v.size(); ++i) ts::store_value(buf.data(), i, dtype, v[i]);
  for (size_t i = 0; i < v.size(); ++i) out[i] = ts::load_value(buf.data(), i, dtype);
  return out;
}

// Runs adasum_allreduce of every rank's tensors (inputs[r][t]) and checks this rank's result
// against `expected` per tensor (scaled tolerance) and against rank 0's bits.
void run_case(const std::string& what, DataType dtype, const std::vector<std::vector<Vec>>& inputs,
              const std::vector<Vec>& expected) {
  Communicator& c = mp_communicator();
  const std::vector<Vec>& mine = inputs[c.rank()];
  std::vector<size_t> counts;
  size_t total = 0;
  for (const Vec& t : mine) {
    counts.push_back(t.size());
    total += t.size();
  }
  const size_t elem = data_type_bytes(dtype);
  std::vector<uint8_t> in(total * elem), out(total * elem);
  size_t at = 0;
  for (const Vec& t : mine)
    for (double v : t) ts::store_value(in.data(), at++, dtype, v);
  const bool in_place = c.rank() % 2 == 0;  // both forms, on different ranks
  if (in_place) out = in;
  Status s = collectives::adasum_allreduce(c, in_place ? out.data() : in.data(), out.data(), counts,
                                           dtype, options());
  ASSERT_TRUE(s.ok()) << what << ": " << s.to_string();
  at = 0;
  const double tol = tolerance(dtype, c.size());
  for (size_t t = 0; t < expected.size(); ++t) {
    double scale = 1;
    for (double v : expected[t]) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < expected[t].size(); ++i, ++at) {
      const double got = ts::load_value(out.data(), at, dtype);
      ASSERT_NEAR(got, expected[t][i], tol * scale)
          << what << " " << data_type_name(dtype) << " tensor " << t << " element " << i
          << " on rank " << c.rank() << " of " << c.size();
    }
  }
  Status same = ts::check_same_bits(c, out.data(), out.size(), what);
  ASSERT_TRUE(same.ok()) << same.to_string();
}

Vec random_vec(std::mt19937_64& rng, size_t count) {
  std::normal_distribution<double> normal(0.0, 1.0);
  Vec v(count);
  for (double& x : v) x = normal(rng);
  return v;
}

TEST(AdasumMp, OrthogonalVectorsSum) {
  const int n = mp_communicator().size();
  const size_t count = 4 * static_cast<size_t>(n) + 3;
  for (DataType dtype : kFloatTypes) {
    // Rank r's vector is non-zero only on elements i with i % n == r: disjoint supports.
    std::vector<std::vector<Vec>> inputs(n);
    Vec sum(count, 0.0);
    for (int r = 0; r < n; ++r) {
      Vec v(count, 0.0);
      for (size_t i = r; i < count; i += n) v[i] = 1.0 + 0.25 * (r + 1) + 0.5 * (i % 3);
      v = rounded(v, dtype);
      for (size_t i = 0; i < count; ++i) sum[i] += v[i];
      inputs[r] = {v};
    }
    run_case("orthogonal", dtype, inputs, {sum});
  }
}

TEST(AdasumMp, IdenticalVectorsGiveTheVector) {
  const int n = mp_communicator().size();
  std::mt19937_64 rng(7);
  for (DataType dtype : kFloatTypes) {
    const Vec v = rounded(random_vec(rng, 1009), dtype);
    run_case("identical", dtype, std::vector<std::vector<Vec>>(n, {v}), {v});
  }
}

TEST(AdasumMp, ParallelVectorsAverageAtPowersOfTwo) {
  const int n = mp_communicator().size();
  if ((n & (n - 1)) != 0) GTEST_SKIP() << "the average holds on a balanced tree (n = 2^k)";
  std::mt19937_64 rng(11);
  for (DataType dtype : kFloatTypes) {
    const Vec v = rounded(random_vec(rng, 257), dtype);
    std::vector<std::vector<Vec>> inputs(n);
    double mean_factor = 0;
    for (int r = 0; r < n; ++r) {
      const double factor = 1.0 + r;  // exact in every dtype
      Vec x(v.size());
      for (size_t i = 0; i < v.size(); ++i) x[i] = factor * v[i];
      inputs[r] = {rounded(x, dtype)};
      mean_factor += factor / n;
    }
    Vec mean(v.size());
    for (size_t i = 0; i < v.size(); ++i) mean[i] = mean_factor * v[i];
    run_case("parallel", dtype, inputs, {mean});
  }
}

TEST(AdasumMp, RandomFusedTensorsMatchTheReferenceTree) {
  const int n = mp_communicator().size();
  const std::vector<size_t> counts = {1009, 1, 0, static_cast<size_t>(n) + 2, 300};
  for (DataType dtype : kFloatTypes) {
    std::mt19937_64 rng(1234 + static_cast<int>(dtype));
    std::vector<std::vector<Vec>> inputs(n);
    for (int r = 0; r < n; ++r)
      for (size_t count : counts) inputs[r].push_back(rounded(random_vec(rng, count), dtype));
    // One rank's tensor 4 is zero: the others' combination passes through it unchanged.
    inputs[n - 1][4].assign(counts[4], 0.0);
    std::vector<Vec> expected;
    for (size_t t = 0; t < counts.size(); ++t) {
      std::vector<Vec> xs;
      for (int r = 0; r < n; ++r) xs.push_back(inputs[r][t]);
      expected.push_back(ts::adasum_tree(xs));
    }
    run_case("random fused", dtype, inputs, expected);
  }
}

TEST(AdasumMp, RefusesIntegersAndElementwiseCollectives) {
  Communicator& c = mp_communicator();
  std::vector<int32_t> ints(8, 1);
  Status s = collectives::adasum_allreduce(c, ints.data(), ints.data(), ints.size(),
                                           DataType::kInt32, options());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find("adasum is not defined for int32"), std::string::npos) << s.message();
  // The selector's entry point runs Adasum whatever algorithm is asked for, and refuses ints.
  s = collectives::run_allreduce(collectives::Algorithm::kRing, c, ints.data(), ints.data(),
                                 ints.size(), DataType::kInt32, ReduceOp::kAdasum, options());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  std::vector<float> floats(8 * c.size(), 1.0f), block(8);
  s = collectives::ring_reducescatter(c, floats.data(), block.data(),
                                      std::vector<size_t>(c.size(), 8), DataType::kFloat32,
                                      ReduceOp::kAdasum, options());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find("not an elementwise reduction"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace mp
}  // namespace hora
