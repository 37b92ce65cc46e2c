// The builtin communicator across fork()ed processes: a rank killed with SIGKILL while
// another waits on it is reported (kRemote naming it) well before the deadline, over shm and
// over TCP; /dev/shm holds no hora segment after init, nor after kill -9 of every rank.
#include <dirent.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>

#include "tests/collectives/backends/builtin/builtin_test_util.h"

namespace hora {
namespace collectives {
namespace builtin_test {
namespace {

class BuiltinProcesses : public ::testing::TestWithParam<bool> {};

TEST_P(BuiltinProcesses, KilledPeerIsReportedBeforeTheDeadline) {
  const bool shm = GetParam();
  auto results = run_processes(3, [shm](int rank, Store& store) -> Status {
    HORA_ASSIGN_OR_RETURN(auto comm, make_builtin_communicator(rank, 3, store, test_options(shm)));
    uint8_t byte = 0;
    if (rank == 1) raise(SIGKILL);  // dies after init, while ranks 0 and 2 wait on it
    auto start = std::chrono::steady_clock::now();
    Status st = comm->recv(1, &byte, 1, 3, Deadline::after(std::chrono::seconds(30)));
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (st.code() != StatusCode::kRemote || st.message().find("rank 1") == std::string::npos)
      return Status::internal("expected kRemote naming rank 1, got " + st.to_string());
    if (took > 10) return Status::internal("detection took " + std::to_string(took) + " s");
    // The survivors still talk to each other.
    int peer = 2 - rank;
    HORA_RETURN_IF_ERROR(comm->isend(peer, &byte, 1, 4).status());
    return comm->recv(peer, &byte, 1, 4, Deadline::after(std::chrono::seconds(10)));
  });
  EXPECT_EQ(results[1].signal, SIGKILL);
  for (int r : {0, 2})
    EXPECT_EQ(results[r].exit_code, 0) << "rank " << r << ": " << results[r].message;
}

INSTANTIATE_TEST_SUITE_P(ShmAndTcp, BuiltinProcesses, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "shm" : "tcp");
                         });

// Each rank reports through a pipe once its communicator is up; the parent checks /dev/shm,
// then kills every rank with SIGKILL and checks again.
TEST(BuiltinShm, NothingLeftInDevShmAfterInitOrKill9) {
  const int n = 4;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  std::vector<std::string> after_init, after_kill;
  auto results = run_processes(
      n,
      [&](int rank, Store& store) -> Status {
        close(ready[0]);
        HORA_ASSIGN_OR_RETURN(auto comm,
                              make_builtin_communicator(rank, n, store, test_options(true)));
        uint8_t byte = 1;
        if (write(ready[1], &byte, 1) != 1) return Status::io("pipe");
        // Wait for a message that never comes, until killed.
        return comm->recv((rank + 1) % n, &byte, 1, 1, Deadline::after(std::chrono::seconds(60)));
      },
      [&](std::vector<pid_t>& pids) {
        close(ready[1]);
        int got = 0;
        while (got < n) {
          pollfd p{ready[0], POLLIN, 0};
          if (poll(&p, 1, 30000) <= 0) break;
          uint8_t b;
          if (read(ready[0], &b, 1) != 1) break;
          ++got;
        }
        EXPECT_EQ(got, n) << "not every rank initialised";
        after_init = segments_of(pids);
        for (pid_t p : pids) kill(p, SIGKILL);
        for (pid_t p : pids) waitpid(p, nullptr, 0);
        after_kill = segments_of(pids);
      });
  close(ready[0]);
  EXPECT_TRUE(after_init.empty()) << after_init.size() << " segment(s) left after init, e.g. "
                                  << after_init[0];
  EXPECT_TRUE(after_kill.empty()) << after_kill.size() << " segment(s) left after kill -9";
  (void)results;  // reaped in the callback already
}

}  // namespace
}  // namespace builtin_test
}  // namespace collectives
}  // namespace hora
