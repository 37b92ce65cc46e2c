// A thread that waits on a handle runs the engine's rounds itself (HORA_WAITERS_HELP,
// docs/architecture.md, "The engine's fast paths"): ranks that help and ranks that leave every
// round to the background thread agree bit for bit; the waiting thread does run rounds (the
// completion callback sees it) and never does with HORA_WAITERS_HELP=0; many threads waiting
// at once all complete; a timed wait on a tensor no peer submitted still returns in time; after
// a run of helped steps (the background thread then expects a helper, Engine::wait_for_round), a
// step nobody waits on still goes, and helped steps resume after it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hora/hora.h"

namespace hora {
namespace {

using Clock = std::chrono::steady_clock;

TensorView view(std::vector<float>& v) {
  return TensorView::flat(v.data(), DataType::kFloat32, static_cast<int64_t>(v.size())).value();
}

float input(int t, size_t i, int r) { return static_cast<float>((r + 1) * (i % 7 + 1) + t); }
float expected_sum(int t, size_t i, int n) {
  return static_cast<float>((i % 7 + 1) * (n * (n + 1) / 2) + n * t);
}

void reinit(std::vector<std::pair<std::string, std::string>> settings) {
  ASSERT_TRUE(shutdown().ok());
  InitOptions options;
  options.settings = std::move(settings);
  ASSERT_TRUE(init(options).ok());
}

// `steps` steps of `tensors` allreduces named prefix.t, enqueued back to back then waited;
// every result checked. Returns how many completion callbacks a round run on this thread ran.
// With `late` > 0, in step s rank s % size() sleeps that long before it enqueues, so that it
// comes last and its round finds every other rank's request already there.
int run_steps(const std::string& prefix, int tensors, int steps,
              std::chrono::microseconds late = std::chrono::microseconds(0)) {
  std::vector<std::vector<float>> in(tensors), out(tensors);
  for (int t = 0; t < tensors; ++t) {
    const size_t n = 1 + static_cast<size_t>(t * 37) % 300;
    for (size_t i = 0; i < n; ++i) in[t].push_back(input(t, i, rank()));
    out[t].assign(n, -1.f);
  }
  std::atomic<int> here{0};
  const std::thread::id me = std::this_thread::get_id();
  std::vector<Handle> handles(tensors);
  std::vector<char> registering(tensors, 0);  // outlives every callback of the handles
  for (int s = 0; s < steps; ++s) {
    if (late.count() > 0 && s % size() == rank()) std::this_thread::sleep_for(late);
    for (int t = 0; t < tensors; ++t) {
      handles[t] =
          allreduce_async(prefix + std::to_string(t), view(in[t]), view(out[t]), ReduceOp::kSum);
      // A handle already complete runs its callback at once, here: not a round run here.
      registering[t] = 1;
      const char* flag = &registering[t];
      handles[t].on_complete([&here, flag, me](const Status&) {
        if (std::this_thread::get_id() == me && *flag == 0) ++here;
      });
      registering[t] = 0;
    }
    for (int t = 0; t < tensors; ++t) {
      Status st = handles[t].wait();
      EXPECT_TRUE(st.ok()) << st.to_string();
      if (!st.ok()) return here.load();
    }
    for (int t = 0; t < tensors; ++t)
      for (size_t i = 0; i < out[t].size(); ++i) {
        EXPECT_EQ(out[t][i], expected_sum(t, i, size()))
            << prefix << t << "[" << i << "] in step " << s;
        if (out[t][i] != expected_sum(t, i, size())) return here.load();
      }
  }
  return here.load();
}

TEST(EngineHelp, RanksThatHelpAndRanksThatDoNotAgree) {
  // Even ranks help, odd ranks leave every round to their background thread.
  reinit({{"HORA_WAITERS_HELP", rank() % 2 == 0 ? "1" : "0"}});
  run_steps("mixed.", 24, 30);
  reinit({});
}

TEST(EngineHelp, TheWaitingThreadRunsRoundsOnlyWhenAllowed) {
  // With helping on, a waiting thread that finds the run token free runs the round. A lone
  // call waited at once gets there before the background thread, which its wait does not
  // wake (Engine::waiting); its round completes the call when every other rank's request is
  // already there, so the ranks take turns coming last (a rank that is always early finds
  // its round agreeing nothing and leaves the next to its background thread: with no turns,
  // a loaded peer made one rank help in none of 300 calls). Over 300 calls some callbacks
  // run here. With it off, never.
  const int helped = run_steps("help.on.", 1, 300, std::chrono::microseconds(2000));
  std::printf("rank %d: %d of 300 lone calls completed on the waiting thread\n", rank(), helped);
  EXPECT_GT(helped, 0);
  reinit({{"HORA_WAITERS_HELP", "0"}});
  EXPECT_EQ(run_steps("help.off.", 2, 50), 0);
  reinit({});
}

TEST(EngineHelp, ManyWaitingThreadsAllComplete) {
  // Four threads each enqueue and wait on their own tensors (the same sequence on every
  // rank): they contend for the run token, and every handle completes with the right sum.
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([k] { run_steps("thread" + std::to_string(k) + ".", 3, 40); });
  for (std::thread& t : threads) t.join();
}

TEST(EngineHelp, ATimedWaitOnATensorNoPeerSubmittedReturnsInTime) {
  if (size() < 2) GTEST_SKIP() << "needs a peer that does not submit";
  std::vector<float> x(3, 1.f);
  Handle h;
  if (rank() == 0) {
    h = allreduce_async("lonely", view(x), view(x), ReduceOp::kSum);
    const auto t0 = Clock::now();
    EXPECT_EQ(h.wait(std::chrono::milliseconds(300)).code(), StatusCode::kTimeout);
    // The help runs at most a round past the timeout; the peers answer one per heartbeat.
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(10));
  }
  ASSERT_TRUE(barrier().ok());
  if (rank() != 0) h = allreduce_async("lonely", view(x), view(x), ReduceOp::kSum);
  ASSERT_TRUE(h.wait().ok());
  EXPECT_EQ(x[0], static_cast<float>(size()));
}

TEST(EngineHelp, AfterHelpedStepsAStepNobodyWaitsOnStillGoes) {
  // A long cycle time: the background thread, expecting a helper after the helped steps,
  // sleeps through eight of them (kPredictedBurstCycles); the step nobody waits on goes when
  // they end.
  reinit({{"HORA_CYCLE_TIME_MS", "100"}});
  run_steps("streak.", 8, 12);
  for (int round = 0; round < 2; ++round) {
    std::vector<float> x(5, static_cast<float>(rank() + 1));
    Handle h = allreduce_async("polled", view(x), view(x), ReduceOp::kSum);
    // Polled only: a zero-timeout wait neither ends the burst nor helps.
    const auto t0 = Clock::now();
    while (h.wait(std::chrono::milliseconds(0)).code() == StatusCode::kTimeout) {
      ASSERT_LT(Clock::now() - t0, std::chrono::seconds(60)) << "the unwaited step never went";
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_TRUE(h.wait().ok());
    EXPECT_EQ(x[0], static_cast<float>(size() * (size() + 1) / 2));
    run_steps("streak.", 8, 6);  // helped again
  }
  reinit({});
}

}  // namespace
}  // namespace hora
