// main() of mpi_communicator_mp_test: every rank runs the same tests in the same order.
//
// Modes (first argument):
//   (none)              main() initialises MPI (MPI_THREAD_SERIALIZED) as an application
//                       would, runs every test but SelfInit.*, then combines the ranks'
//                       results with MPI_Allreduce of a failure flag and finalises MPI itself;
//                       the exit code is non-zero on every rank when any rank failed.
//   --hora-mode=selfinit  MPI untouched; runs SelfInit.* only (hora initialises and finalises;
//                       each rank's exit code is its own result, mpirun fails the job when any
//                       rank exits non-zero).
//   --hora-mode=funneled  as the default mode with MPI_THREAD_FUNNELED, running Funneled.*.
//   --hora-mode=die     rank 1 calls _exit(1) while the others wait in recv with a 90 s
//                       deadline: mpirun must tear the job down and exit non-zero well before
//                       that (checked by expect_nonzero_within.sh).
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "collectives/backends/mpi/mpi_communicator.h"

namespace {

// Ranks other than 0 print only their failures, prefixed with the rank.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.summary());
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed())
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(), info.name());
  }

 private:
  int rank_;
};

void quiet_unless_rank0(int rank) {
  if (rank == 0) return;
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  delete listeners.Release(listeners.default_result_printer());
  listeners.Append(new RankFailurePrinter(rank));
}

int run_die_mode() {
  using namespace hora;
  auto made = collectives::MpiCommunicator::create();
  if (!made.ok()) {
    std::fprintf(stderr, "die mode: %s\n", made.status().to_string().c_str());
    return 2;
  }
  auto& comm = *made;
  if (comm->size() < 2) {
    std::fprintf(stderr, "die mode needs at least 2 ranks\n");
    return 2;
  }
  const Deadline start = Deadline::after(std::chrono::seconds(30));
  if (!comm->barrier(start).ok()) return 2;
  if (comm->rank() != 1) {
    std::fprintf(stderr, "die mode: rank %d waiting in recv from rank 1\n", comm->rank());
    std::fflush(stderr);
  }
  // After this barrier every other rank has printed and is about to wait in recv.
  if (!comm->barrier(start).ok()) return 2;
  if (comm->rank() == 1) _exit(1);  // dies without MPI_Finalize, mid-run
  int64_t value = 0;
  Status status =
      comm->recv(1, &value, sizeof(value), 1, Deadline::after(std::chrono::seconds(90)));
  std::fprintf(stderr, "die mode: rank %d recv returned %s\n", comm->rank(),
               status.to_string().c_str());
  _exit(status.ok() ? 0 : 3);  // OK would be a bug: rank 1 never sends
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const char* mode = "app";
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--hora-mode=", 12) == 0) mode = argv[i] + 12;
  if (std::strcmp(mode, "die") == 0) return run_die_mode();
  if (std::strcmp(mode, "selfinit") == 0) {
    GTEST_FLAG_SET(filter, "SelfInit.*");
    const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
    quiet_unless_rank0(rank ? std::atoi(rank) : 0);
    return RUN_ALL_TESTS();
  }
  const bool funneled = std::strcmp(mode, "funneled") == 0;
  if (!funneled && std::strcmp(mode, "app") != 0) {
    std::fprintf(stderr, "unknown --hora-mode=%s (app, selfinit, funneled, die)\n", mode);
    return 2;
  }
  int provided = MPI_THREAD_SINGLE;
  if (MPI_Init_thread(&argc, &argv, funneled ? MPI_THREAD_FUNNELED : MPI_THREAD_SERIALIZED,
                      &provided) != MPI_SUCCESS)
    return 2;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  GTEST_FLAG_SET(filter, funneled ? "Funneled.*" : "-SelfInit.*:Funneled.*");
  quiet_unless_rank0(rank);
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 1;
  if (MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
    any_failed = 1;
  if (rank == 0 && any_failed && !failed) std::fprintf(stderr, "another rank failed\n");
  MPI_Finalize();
  return any_failed;
}
