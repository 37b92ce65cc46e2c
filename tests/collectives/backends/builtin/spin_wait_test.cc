// The builtin waiters' spin policy (spin_budget.h) and the affinity rule that sets it
// (cpu_affinity.h): the budget stays at its maximum while waits end spinning, falls to the
// floor when they sleep or the spinner is descheduled, and a probe brings it back; and, across
// fork()ed ranks with a busy thread beside each, a peer stopped with SIGSTOP still costs a
// waiter exactly its deadline (kTimeout naming the stopped rank), at N = 2, 3, 4.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "collectives/backends/builtin/cpu_affinity.h"
#include "collectives/backends/builtin/spin_budget.h"
#include "tests/collectives/backends/builtin/builtin_test_util.h"

namespace hora {
namespace collectives {
namespace builtin_test {
namespace {

using builtin::SpinBudget;
using std::chrono::microseconds;

TEST(SpinBudget, StaysAtTheMaximumWhileWaitsEndSpinning) {
  SpinBudget b(microseconds(50));
  for (int i = 0; i < 100; ++i) {
    b.begin_wait();
    b.on_spun();
    EXPECT_EQ(b.current(), microseconds(50));
  }
}

TEST(SpinBudget, FallsToTheFloorWhenWaitsSleepAndAProbeRestoresIt) {
  SpinBudget b(microseconds(50));
  for (int i = 0; i < 10; ++i) {
    b.begin_wait();
    b.on_slept();
  }
  EXPECT_EQ(b.current(), SpinBudget::kMinSpin);
  // Within kProbeEvery waits one spins the whole maximum; when it ends spinning (the cores
  // are free again) the budget is back at the maximum.
  bool probed = false;
  for (uint32_t i = 0; i < SpinBudget::kProbeEvery && !probed; ++i) {
    b.begin_wait();
    if (b.current() == microseconds(50)) {
      probed = true;
      b.on_spun();
    } else {
      b.on_slept();
    }
  }
  EXPECT_TRUE(probed);
  EXPECT_EQ(b.current(), microseconds(50));
  // A failed probe leaves the floor where it was.
  SpinBudget c(microseconds(50));
  for (int i = 0; i < 10; ++i) c.on_slept();
  for (uint32_t i = 0; i < 2 * SpinBudget::kProbeEvery; ++i) {
    c.begin_wait();
    c.on_slept();
    EXPECT_EQ(c.current(), SpinBudget::kMinSpin);
  }
}

TEST(SpinBudget, ADescheduledSpinnerDropsToTheFloorAtOnce) {
  SpinBudget b(microseconds(50));
  b.begin_wait();
  EXPECT_FALSE(b.preempted(microseconds(3)));
  EXPECT_EQ(b.current(), microseconds(50));
  EXPECT_TRUE(b.preempted(microseconds(200)));
  EXPECT_EQ(b.current(), SpinBudget::kMinSpin);
  // Spinning off: never any spin.
  SpinBudget off(microseconds(0));
  off.begin_wait();
  off.on_spun();
  EXPECT_EQ(off.current().count(), 0);
  off.on_slept();
  EXPECT_EQ(off.current().count(), 0);
}

TEST(CpuAffinity, RanksShareCoresWhenTheUnionOfTheirMasksIsSmallerThanTheirCount) {
  EXPECT_FALSE(builtin::affinity_text().empty());
  // mpirun --bind-to core: one CPU each, different ones: not sharing.
  EXPECT_EQ(builtin::union_cpus({"0", "1"}), 2);
  EXPECT_FALSE(builtin::ranks_share_cores(2, builtin::union_cpus({"0", "1"})));
  // Two ranks bound to one core: sharing.
  EXPECT_TRUE(builtin::ranks_share_cores(2, builtin::union_cpus({"3", "3"})));
  // horarun on 2 CPUs: 2 ranks are not sharing, 4 are.
  EXPECT_FALSE(builtin::ranks_share_cores(2, builtin::union_cpus({"0,1", "0,1"})));
  EXPECT_TRUE(builtin::ranks_share_cores(4, builtin::union_cpus({"0,1", "0,1", "0,1", "0,1"})));
  // A mask that does not parse never claims sharing by itself: it counts as every CPU.
  EXPECT_GE(builtin::union_cpus({"0", "x"}), 1);
}

class StoppedPeer : public ::testing::TestWithParam<int> {};

TEST_P(StoppedPeer, WaiterUnderLoadKeepsItsDeadline) {
  const int n = GetParam();
  const int stopped = n - 1;
  int done[2];
  ASSERT_EQ(pipe(done), 0);
  auto results = run_processes(
      n,
      [&](int rank, Store& store) -> Status {
        close(done[0]);
        HORA_ASSIGN_OR_RETURN(auto comm,
                              make_builtin_communicator(rank, n, store, test_options(true)));
        // A busy thread beside the rank, as training's compute: the spin budget adapts.
        std::atomic<bool> stop{false};
        std::thread busy([&stop] {
          volatile double x = 1;
          while (!stop.load(std::memory_order_relaxed)) x = x * 1.0000001 + 1e-9;
        });
        std::vector<float> in(1024, 1.0f), out(1024);
        Status st;
        for (int i = 0; i < 300 && st.ok(); ++i)
          st = comm->allreduce(in.data(), out.data(), in.size(), DataType::kFloat32, ReduceOp::kSum,
                               Deadline::after(std::chrono::seconds(20)));
        if (st.ok() && out[0] != static_cast<float>(n))
          st = Status::internal("allreduce gave " + std::to_string(out[0]));
        if (st.ok() && rank == stopped) raise(SIGSTOP);  // the parent kills it later
        if (st.ok()) {
          const auto start = std::chrono::steady_clock::now();
          Status wait = comm->allreduce(in.data(), out.data(), in.size(), DataType::kFloat32,
                                        ReduceOp::kSum, Deadline::after(std::chrono::seconds(2)));
          const double took =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          const std::string who = std::to_string(stopped);
          if (wait.code() != StatusCode::kTimeout ||
              (wait.message().find("rank " + who) == std::string::npos &&
               wait.message().find("rank(s) " + who) == std::string::npos))
            st = Status::internal("expected kTimeout naming rank " + std::to_string(stopped) +
                                  ", got " + wait.to_string());
          else if (took < 1.9 || took > 3.5)
            st = Status::internal("the 2 s deadline took " + std::to_string(took) + " s");
        }
        stop = true;
        busy.join();
        uint8_t byte = 1;
        if (write(done[1], &byte, 1) != 1) return Status::io("pipe");
        return st;
      },
      [&](std::vector<pid_t>& pids) {
        close(done[1]);
        for (int got = 0; got < n - 1;) {
          pollfd p{done[0], POLLIN, 0};
          if (poll(&p, 1, 60000) <= 0) break;
          uint8_t b;
          if (read(done[0], &b, 1) != 1) break;
          ++got;
        }
        kill(pids[stopped], SIGKILL);
      });
  close(done[0]);
  EXPECT_EQ(results[stopped].signal, SIGKILL);
  for (int r = 0; r < stopped; ++r)
    EXPECT_EQ(results[r].exit_code, 0) << "n=" << n << " rank " << r << ": " << results[r].message;
}

INSTANTIATE_TEST_SUITE_P(Ranks, StoppedPeer, ::testing::Values(2, 3, 4));

}  // namespace
}  // namespace builtin_test
}  // namespace collectives
}  // namespace hora
