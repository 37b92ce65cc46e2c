// A rank that dies or stalls mid-collective: every survivor must fail before its deadline,
// with the dead rank's number in its error (directly, or through the peer that failed first
// and left with that reason, as a real job's teardown would propagate it).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "collectives/selector.h"
#include "tests/support/multi_rank.h"

namespace hora {
namespace collectives {
namespace {

using test_support::InProcCommunicator;
using test_support::InProcWorld;

enum class Collective {
  kRingAllreduce,
  kTreeAllreduce,
  kRdAllreduce,
  kBroadcast,
  kAllgatherv,
  kReducescatter,
  kAlltoallv,
  kBarrier
};

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::kRingAllreduce: return "ring_allreduce";
    case Collective::kTreeAllreduce: return "tree_allreduce";
    case Collective::kRdAllreduce: return "rd_allreduce";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kAllgatherv: return "allgatherv";
    case Collective::kReducescatter: return "reducescatter";
    case Collective::kAlltoallv: return "alltoallv";
    case Collective::kBarrier: return "barrier";
  }
  return "?";
}

Status run_collective(Collective c, Communicator& comm, const AlgorithmOptions& options) {
  const size_t count = 1009;
  const int n = comm.size();
  std::vector<float> in(count * n, 1.0f), out(count * n, 0.0f);
  std::vector<size_t> counts = even_split(count, n);
  switch (c) {
    case Collective::kRingAllreduce:
      return ring_allreduce(comm, in.data(), out.data(), count, DataType::kFloat32, ReduceOp::kSum,
                            options);
    case Collective::kTreeAllreduce:
      return tree_allreduce(comm, in.data(), out.data(), count, DataType::kFloat32, ReduceOp::kSum,
                            options);
    case Collective::kRdAllreduce:
      return recursive_doubling_allreduce(comm, in.data(), out.data(), count, DataType::kFloat32,
                                          ReduceOp::kSum, options);
    case Collective::kBroadcast:
      return pipelined_broadcast(comm, in.data(), out.data(), count, DataType::kFloat32, 0,
                                 options);
    case Collective::kAllgatherv:
      return ring_allgatherv(comm, in.data(), out.data(), counts, DataType::kFloat32, options);
    case Collective::kReducescatter:
      return ring_reducescatter(comm, in.data(), out.data(), counts, DataType::kFloat32,
                                ReduceOp::kSum, options);
    case Collective::kAlltoallv: {
      std::vector<size_t> each(n, 7);
      return pairwise_alltoallv(comm, in.data(), each, out.data(), each, DataType::kFloat32,
                                options);
    }
    case Collective::kBarrier: return dissemination_barrier(comm, options);
  }
  return Status::internal("unknown collective");
}

using Param = std::tuple<Collective, int>;  // collective, ranks
class PeerFailureTest : public ::testing::TestWithParam<Param> {};

// How many sends/receives the victim posts before it dies. The ring schedules (and the tree)
// need every rank's messages until the very end, so any point kills them for everyone; the
// victim dies after 2 messages there. Recursive doubling, alltoallv and the barrier move each
// rank's data in few messages, so a late death can legitimately leave ranks that already have
// everything they need: there the victim dies at its first message.
int ops_before_death(Collective c) {
  switch (c) {
    case Collective::kRingAllreduce:
    case Collective::kTreeAllreduce:
    case Collective::kAllgatherv:
    case Collective::kReducescatter: return 3;
    default: return 1;
  }
}

// The victim is killed after it has posted a few sends/receives: mid-collective.
TEST_P(PeerFailureTest, KilledRankIsNamedByEverySurvivorBeforeTheDeadline) {
  const Collective collective = std::get<0>(GetParam());
  const int n = std::get<1>(GetParam());
  const int victim = n / 2;
  const auto timeout = std::chrono::seconds(20);
  for (test_support::SendMode mode :
       {test_support::SendMode::kEager, test_support::SendMode::kRendezvous}) {
    SCOPED_TRACE(mode == test_support::SendMode::kEager ? "eager" : "rendezvous");
    const auto start = Deadline::Clock::now();
    auto statuses = test_support::run_ranks_each(
        n,
        [&](InProcCommunicator& comm, InProcWorld& world) -> Status {
          if (comm.rank() == victim) world.kill_after_ops(victim, ops_before_death(collective));
          AlgorithmOptions options;
          options.deadline = Deadline::after(timeout);
          options.segment_bytes = 16;
          return run_collective(collective, comm, options);
        },
        mode);
    const auto elapsed = Deadline::Clock::now() - start;
    EXPECT_LT(elapsed, timeout);
    const std::string needle = "rank " + std::to_string(victim) + " is dead";
    for (int r = 0; r < n; ++r) {
      if (r == victim) continue;
      const Status& s = statuses[r];
      // A broadcast rank before the victim in the chain does not depend on it.
      if (collective == Collective::kBroadcast && r < victim && s.ok()) continue;
      ASSERT_FALSE(s.ok()) << collective_name(collective) << ": rank " << r << " succeeded";
      EXPECT_TRUE(s.code() == StatusCode::kRemote || s.code() == StatusCode::kTimeout)
          << s.to_string();
      EXPECT_NE(s.message().find(needle), std::string::npos)
          << collective_name(collective) << ": rank " << r << ": " << s.to_string();
    }
  }
}

// The victim never joins (a stall, not a crash): the survivors' waits on it time out, and the
// others learn it from the peer that timed out.
TEST_P(PeerFailureTest, StalledRankTimesOutNamingIt) {
  const Collective collective = std::get<0>(GetParam());
  const int n = std::get<1>(GetParam());
  const int victim = n / 2;  // not last: a broadcast chain must pass through it
  auto statuses =
      test_support::run_ranks_each(n, [&](InProcCommunicator& comm, InProcWorld&) -> Status {
        if (comm.rank() == victim) return Status::OK();
        AlgorithmOptions options;
        options.deadline = Deadline::after(std::chrono::milliseconds(200));
        options.segment_bytes = 16;
        return run_collective(collective, comm, options);
      });
  // Only the ranks that wait on the victim directly can blame it; the others may time out on
  // a peer that is itself stuck (all deadlines fall due together) or hear from one that left.
  const std::string needle = "waiting for rank " + std::to_string(victim);
  int failed = 0;
  int naming = 0;
  for (int r = 0; r < n; ++r) {
    if (r == victim || statuses[r].ok()) continue;  // broadcast ranks before it may finish
    ++failed;
    EXPECT_TRUE(statuses[r].code() == StatusCode::kTimeout ||
                statuses[r].code() == StatusCode::kRemote)
        << statuses[r].to_string();
    naming += statuses[r].message().find(needle) != std::string::npos;
  }
  EXPECT_GT(failed, 0) << collective_name(collective);
  EXPECT_GT(naming, 0) << collective_name(collective);
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::string(collective_name(std::get<0>(info.param))) + "_" +
         std::to_string(std::get<1>(info.param)) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(
    All, PeerFailureTest,
    ::testing::Combine(::testing::Values(Collective::kRingAllreduce, Collective::kTreeAllreduce,
                                         Collective::kRdAllreduce, Collective::kBroadcast,
                                         Collective::kAllgatherv, Collective::kReducescatter,
                                         Collective::kAlltoallv, Collective::kBarrier),
                       ::testing::Values(3, 4, 5)),
    param_name);

}  // namespace
}  // namespace collectives
}  // namespace hora
