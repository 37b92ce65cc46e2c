// Who initialises and finalises MPI, and the thread level. AppInit runs in the default mode
// (main() initialised MPI); SelfInit runs alone in --hora-mode=selfinit, where nothing
// initialised MPI before hora; Funneled in --hora-mode=funneled.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <thread>

#include "collectives/backends/mpi/mpi_communicator.h"
#include "tests/collectives/backends/mpi/mpi_test_util.h"

namespace hora {
namespace collectives {
namespace mpi_test {
namespace {

using ::testing::HasSubstr;

bool mpi_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

TEST(AppInit, UsesTheApplicationsMpiAndLeavesItRunning) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  ASSERT_TRUE(initialized) << "main() initialises MPI in this mode";
  int world_rank = -1, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  {
    auto made = make_mpi_communicator(world_rank, world_size);
    ASSERT_TRUE(made.ok()) << made.status().to_string();
    auto& comm = *made;
    EXPECT_EQ(comm->rank(), world_rank);
    EXPECT_EQ(comm->size(), world_size);
    EXPECT_STREQ(comm->backend_name(), "mpi");
    EXPECT_FALSE(static_cast<MpiCommunicator&>(*comm).initialised_mpi());
    int compare = MPI_UNEQUAL;
    MPI_Comm_compare(static_cast<MpiCommunicator&>(*comm).mpi_comm(), MPI_COMM_WORLD, &compare);
    EXPECT_EQ(compare, MPI_CONGRUENT) << "hora must work on a duplicate of MPI_COMM_WORLD";
    int32_t value = 1;
    ASSERT_TRUE(
        comm->allreduce(&value, &value, 1, DataType::kInt32, ReduceOp::kSum, test_deadline()).ok());
    EXPECT_EQ(value, world_size);
  }
  // Destroyed: MPI is still the application's and still works.
  EXPECT_FALSE(mpi_finalized());
  int one = 1, sum = 0;
  ASSERT_EQ(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
  EXPECT_EQ(sum, world_size);
}

TEST(AppInit, FactoryRejectsALayoutThatDisagreesWithMpi) {
  int world_size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  auto made = make_mpi_communicator(-1, world_size + 1);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(made.status().message(), HasSubstr("MPI_COMM_WORLD says rank"));
}

TEST(SelfInit, HoraInitialisesAndKeepsMpiForTheNextCommunicator) {
  int initialized = 1;
  MPI_Initialized(&initialized);
  ASSERT_FALSE(initialized) << "nothing may initialise MPI before hora in this mode";
  auto first = MpiCommunicator::create();
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_TRUE((*first)->initialised_mpi());
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  EXPECT_GE(provided, MPI_THREAD_SERIALIZED);
  auto second = MpiCommunicator::create();
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  const int size = (*first)->size();
  int64_t value = 2;
  ASSERT_TRUE((*second)
                  ->allreduce(&value, &value, 1, DataType::kInt64, ReduceOp::kSum, test_deadline())
                  .ok());
  EXPECT_EQ(value, 2 * size);
  first->reset();
  second->reset();
  // No communicator is left, and MPI is still up: hora::shutdown then hora::init again works.
  EXPECT_FALSE(mpi_finalized());
  auto again = MpiCommunicator::create();
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_TRUE((*again)->initialised_mpi());
  int32_t failed = ::testing::Test::HasFailure() ? 1 : 0;
  ASSERT_TRUE(
      (*again)
          ->allreduce(&failed, &failed, 1, DataType::kInt32, ReduceOp::kMax, test_deadline())
          .ok());
  EXPECT_EQ(failed, 0) << "some rank failed";
  again->reset();
  // MPI_Finalize runs at exit (finalize_at_exit); mpirun fails the job if it does not.
}

// --hora-mode=funneled: main() initialised MPI with MPI_THREAD_FUNNELED.
TEST(Funneled, AcceptedOnMpisMainThreadRejectedElsewhereNamingBothLevels) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided != MPI_THREAD_FUNNELED) GTEST_SKIP() << "this MPI granted level " << provided;
  {
    auto on_main = MpiCommunicator::create();
    ASSERT_TRUE(on_main.ok()) << on_main.status().to_string();
    EXPECT_FALSE((*on_main)->initialised_mpi());
  }
  Status elsewhere;
  std::thread other([&] { elsewhere = MpiCommunicator::create().status(); });
  other.join();
  EXPECT_EQ(elsewhere.code(), StatusCode::kFailedPrecondition) << elsewhere.to_string();
  EXPECT_THAT(elsewhere.message(), HasSubstr("MPI_THREAD_FUNNELED"));
  EXPECT_THAT(elsewhere.message(), HasSubstr("MPI_THREAD_SERIALIZED"));
}

}  // namespace
}  // namespace mpi_test
}  // namespace collectives
}  // namespace hora
