// The allreduce correctness matrix, in process: ranks {1, 2, 3, 4, 5, 7} x algorithm x dtype,
// each instantiation running every op defined on the dtype (bool: min, max, product) x count {0, 1,
// ranks - 1, 1009} x in place / out of place (and 1M + 3 for float32/sum) through
// tests/support/collective_checks, with tiny segments so the many-segment paths run. Label
// "matrix".
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "collectives/algorithms/algorithms.h"
#include "collectives/scratch_pool.h"
#include "collectives/selector.h"
#include "tests/support/collective_checks.h"
#include "tests/support/multi_rank.h"

namespace hora {
namespace collectives {
namespace {

using test_support::AllreduceCase;

using test_support::SendMode;

// ranks, algorithm, dtype, how the in-process transport sends.
using Param = std::tuple<int, Algorithm, DataType, SendMode>;

class AllreduceMatrixTest : public ::testing::TestWithParam<Param> {};

TEST_P(AllreduceMatrixTest, MatchesReferenceWithIdenticalBits) {
  const int ranks = std::get<0>(GetParam());
  const Algorithm algorithm = std::get<1>(GetParam());
  const DataType dtype = std::get<2>(GetParam());
  const SendMode mode = std::get<3>(GetParam());
  const auto cases = test_support::allreduce_cases(ranks, dtype, /*include_large=*/true);
  Status status = test_support::run_ranks(
      ranks,
      [&](Communicator& comm) -> Status {
        ScratchPool pool;  // one per rank, reused by every case as a communicator owner would
        for (const AllreduceCase& c : cases) {
          AlgorithmOptions options;
          options.deadline = Deadline::after(std::chrono::seconds(30));
          options.scratch = &pool;
          const bool is_large = c.count > 100000;
          // Tiny segments reach the many-segment paths; the large case uses a few big ones.
          options.segment_bytes = is_large ? 256 * 1024 : 7 * data_type_bytes(dtype);
          auto fn = [&](Communicator& cm, const void* in, void* out, size_t count, DataType dt,
                        ReduceOp op) {
            return run_allreduce(algorithm, cm, in, out, count, dt, op, options);
          };
          HORA_RETURN_IF_ERROR(test_support::check_allreduce(comm, fn, c, is_large ? 2 : 1));
        }
        return Status::OK();
      },
      mode);
  EXPECT_TRUE(status.ok()) << status.to_string();
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::string(algorithm_name(std::get<1>(info.param))) + "_" +
         std::to_string(std::get<0>(info.param)) + "ranks_" +
         data_type_name(std::get<2>(info.param)) +
         (std::get<3>(info.param) == SendMode::kRendezvous ? "_rendezvous" : "");
}

INSTANTIATE_TEST_SUITE_P(
    All, AllreduceMatrixTest,
    ::testing::Combine(::testing::Values(1, 2, 3, 4, 5, 7),
                       ::testing::Values(Algorithm::kRing, Algorithm::kTree,
                                         Algorithm::kRecursiveDoubling, Algorithm::kAuto),
                       ::testing::Values(DataType::kUint8, DataType::kInt8, DataType::kInt16,
                                         DataType::kUint16, DataType::kInt32, DataType::kInt64,
                                         DataType::kFloat16, DataType::kBFloat16,
                                         DataType::kFloat32, DataType::kFloat64, DataType::kBool),
                       ::testing::Values(SendMode::kEager)),
    param_name);

// Rendezvous sends (complete only when received, like MPI's large messages and gloo's unbound
// buffers) on a few dtypes: an algorithm that would deadlock or reuse a buffer too early on a
// real transport fails here.
INSTANTIATE_TEST_SUITE_P(Rendezvous, AllreduceMatrixTest,
                         ::testing::Combine(::testing::Values(2, 3, 4, 5, 7),
                                            ::testing::Values(Algorithm::kRing, Algorithm::kTree,
                                                              Algorithm::kRecursiveDoubling),
                                            ::testing::Values(DataType::kInt8, DataType::kBFloat16,
                                                              DataType::kFloat32),
                                            ::testing::Values(SendMode::kRendezvous)),
                         param_name);

}  // namespace
}  // namespace collectives
}  // namespace hora
