// The in-process communicator and the run_ranks harness themselves.
#include "tests/support/inproc_communicator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/multi_rank.h"

namespace hora {
namespace test_support {
namespace {

using collectives::Communicator;

Deadline soon() { return Deadline::after(std::chrono::seconds(10)); }

TEST(InProcCommunicatorTest, SendRecvCopiesBytesAndMatchesInPostingOrder) {
  Status status = run_ranks(2, [](Communicator& comm) -> Status {
    if (comm.rank() == 0) {
      for (int v = 0; v < 3; ++v) HORA_RETURN_IF_ERROR(comm.send(1, &v, sizeof v, 7, soon()));
      HORA_RETURN_IF_ERROR(comm.send(1, nullptr, 0, 8, soon()));  // empty message
      return Status::OK();
    }
    int got[3] = {-1, -1, -1};
    HORA_ASSIGN_OR_RETURN(auto first, comm.irecv(0, &got[0], sizeof(int), 7));
    HORA_ASSIGN_OR_RETURN(auto second, comm.irecv(0, &got[1], sizeof(int), 7));
    HORA_ASSIGN_OR_RETURN(auto third, comm.irecv(0, &got[2], sizeof(int), 7));
    // Waited out of order: still matched in posting order (non-overtaking).
    HORA_RETURN_IF_ERROR(third->wait(soon()));
    HORA_RETURN_IF_ERROR(first->wait(soon()));
    HORA_RETURN_IF_ERROR(second->wait(soon()));
    HORA_RETURN_IF_ERROR(comm.recv(0, nullptr, 0, 8, soon()));
    if (got[0] != 0 || got[1] != 1 || got[2] != 2) {
      return Status::internal("got " + std::to_string(got[0]) + std::to_string(got[1]) +
                              std::to_string(got[2]));
    }
    // A second wait returns the same status.
    return second->wait(soon());
  });
  EXPECT_TRUE(status.ok()) << status.to_string();
}

TEST(InProcCommunicatorTest, ByteCountMismatchIsAnErrorNamingBothRanks) {
  auto statuses = run_ranks_each(2, [](InProcCommunicator& comm, InProcWorld&) -> Status {
    uint64_t value = 1;
    if (comm.rank() == 0) return comm.send(1, &value, 4, 1, soon());
    return comm.recv(0, &value, 8, 1, soon());
  });
  ASSERT_EQ(statuses[1].code(), StatusCode::kMismatch) << statuses[1].to_string();
  EXPECT_NE(statuses[1].message().find("rank 0 sent 4 bytes"), std::string::npos);
  EXPECT_NE(statuses[1].message().find("rank 1 expected 8"), std::string::npos);
}

TEST(InProcCommunicatorTest, WaitTimesOutNamingThePeer) {
  auto statuses = run_ranks_each(3, [](InProcCommunicator& comm, InProcWorld&) -> Status {
    if (comm.rank() != 2) return Status::OK();
    int value = 0;
    return comm.recv(1, &value, sizeof value, 3, Deadline::after(std::chrono::milliseconds(50)));
  });
  EXPECT_TRUE(statuses[0].ok());
  ASSERT_EQ(statuses[2].code(), StatusCode::kTimeout) << statuses[2].to_string();
  EXPECT_NE(statuses[2].message().find("waiting for rank 1"), std::string::npos);
}

TEST(InProcCommunicatorTest, DeadPeerFailsReceivesAndSends) {
  auto statuses = run_ranks_each(3, [](InProcCommunicator& comm, InProcWorld& world) -> Status {
    if (comm.rank() == 2) world.kill(2);  // dies before its send, deterministically
    HORA_RETURN_IF_ERROR(comm.send(0, nullptr, 0, 1, soon()));  // everyone checks in with 0
    if (comm.rank() != 0) return Status::OK();
    for (int p = 1; p < 3; ++p) HORA_RETURN_IF_ERROR(comm.recv(p, nullptr, 0, 1, soon()));
    return Status::OK();
  });
  // Rank 0 sees rank 1's message, but rank 2 died before sending.
  ASSERT_EQ(statuses[0].code(), StatusCode::kRemote) << statuses[0].to_string();
  EXPECT_NE(statuses[0].message().find("rank 2 is dead"), std::string::npos);
  EXPECT_TRUE(statuses[1].ok()) << statuses[1].to_string();

  auto sends = run_ranks_each(2, [](InProcCommunicator& comm, InProcWorld& world) -> Status {
    if (comm.rank() == 1) return Status::OK();
    world.kill(1);
    return comm.send(1, nullptr, 0, 1, soon());
  });
  ASSERT_EQ(sends[0].code(), StatusCode::kRemote);
  EXPECT_NE(sends[0].message().find("rank 1 is dead"), std::string::npos);
}

TEST(InProcCommunicatorTest, AbortWakesOwnWaitsAndPeersSeeTheReason) {
  auto statuses = run_ranks_each(2, [](InProcCommunicator& comm, InProcWorld&) -> Status {
    int value = 0;
    if (comm.rank() == 0) {
      comm.fail(Status::io("disk on fire"));
      return comm.recv(1, &value, sizeof value, 1, soon());
    }
    return comm.recv(0, &value, sizeof value, 1, soon());
  });
  ASSERT_EQ(statuses[0].code(), StatusCode::kRemote);
  ASSERT_EQ(statuses[1].code(), StatusCode::kRemote) << statuses[1].to_string();
  EXPECT_NE(statuses[1].message().find("rank 0 left"), std::string::npos);
  EXPECT_NE(statuses[1].message().find("disk on fire"), std::string::npos);
}

TEST(InProcCommunicatorTest, BadPeerIsInvalidArgument) {
  InProcWorld world(2);
  auto comm = world.communicator(0);
  EXPECT_EQ(comm->isend(2, nullptr, 0, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(comm->irecv(-1, nullptr, 0, 0).status().code(), StatusCode::kInvalidArgument);
}

TEST(MultiRankTest, ReturnsTheFirstFailurePrefixedWithItsRankAndUnblocksPeers) {
  const auto start = Deadline::Clock::now();
  Status status = run_ranks(4, [](Communicator& comm) -> Status {
    if (comm.rank() == 3) return Status::internal("check failed on purpose");
    int value = 0;  // everyone else waits on rank 3, which never sends
    return comm.recv(3, &value, sizeof value, 1, Deadline::after(std::chrono::seconds(60)));
  });
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status.to_string();
  EXPECT_NE(status.message().find("rank 3: check failed on purpose"), std::string::npos);
  // The peers were released by the harness (fail()), long before their 60 s deadline.
  EXPECT_LT(Deadline::Clock::now() - start, std::chrono::seconds(30));
}

TEST(MultiRankTest, ExceptionsBecomeInternalErrors) {
  Status status = run_ranks(2, [](Communicator& comm) -> Status {
    if (comm.rank() == 1) throw std::runtime_error("boom");
    return Status::OK();
  });
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_NE(status.message().find("boom"), std::string::npos);
}

}  // namespace
}  // namespace test_support
}  // namespace hora
