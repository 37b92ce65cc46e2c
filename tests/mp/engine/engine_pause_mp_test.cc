// The engine from init on, and its pause for code that drives the job's communicator itself
// (core/context_access.h): while parked no round runs (the engine's round counter stands still
// and the communicator is free for this thread); collectives enqueued meanwhile complete after
// resume; a pause that not every rank asks for times out on the asking rank and leaves the job
// usable; shutdown while parked works (mp_main shuts down after the last test, which leaves
// the engine parked). Every rank runs every test.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "core/context.h"
#include "core/context_access.h"
#include "hora/hora.h"

namespace hora {
namespace {

constexpr auto kPauseWait = std::chrono::seconds(60);

TensorView view(std::vector<float>& v) {
  return TensorView::flat(v.data(), DataType::kFloat32, static_cast<int64_t>(v.size())).value();
}

TEST(EnginePause, TheEngineRunsRoundsFromInitOn) {
  // No collective has run yet in this process: the heartbeat rounds started at init.
  const int64_t before = engine_stats().rounds;
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  EXPECT_GT(engine_stats().rounds, before) << "no round in 350 ms (HORA_HEARTBEAT_MS = 100)";
}

TEST(EnginePause, ParkedEngineRunsNoRoundAndLeavesTheCommunicatorToTheCaller) {
  ASSERT_TRUE(detail::pause_engine(kPauseWait).ok());
  const int64_t parked_at = engine_stats().rounds;
  // The caller's own collective on the job's communicator.
  collectives::Communicator& comm = detail::context()->communicator();
  std::vector<float> data(1000, static_cast<float>(rank() + 1));
  collectives::ScratchPool pool;
  collectives::AlgorithmOptions options;
  options.scratch = &pool;
  options.deadline = Deadline::after_seconds(60);
  Status s = collectives::ring_allreduce(comm, data.data(), data.data(), data.size(),
                                         DataType::kFloat32, ReduceOp::kSum, options);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(data[999], static_cast<float>(size() * (size() + 1) / 2));
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  EXPECT_EQ(engine_stats().rounds, parked_at) << "a round ran while the engine was parked";
  // Pausing again while parked returns at once.
  EXPECT_TRUE(detail::pause_engine(std::chrono::milliseconds(1)).ok());
  detail::resume_engine();
  std::vector<float> x(16, 1.0f);
  s = allreduce("pause.after_resume", view(x), view(x), ReduceOp::kSum);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(x[0], static_cast<float>(size()));
  EXPECT_GT(engine_stats().rounds, parked_at);
}

TEST(EnginePause, CollectivesEnqueuedWhileParkedCompleteAfterResume) {
  ASSERT_TRUE(detail::pause_engine(kPauseWait).ok());
  std::vector<float> x(16, 2.0f);
  Handle h = allreduce_async("pause.enqueued_while_parked", view(x), view(x), ReduceOp::kSum);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(h.poll()) << "completed while every engine was parked";
  detail::resume_engine();
  Status s = h.wait();
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(x[0], 2.0f * size());
}

TEST(EnginePause, APauseOnlyOneRankAsksForTimesOutThere) {
  if (rank() == 0) {
    Status s = detail::pause_engine(std::chrono::milliseconds(300));
    if (size() == 1) {
      EXPECT_TRUE(s.ok()) << s.to_string();  // every rank (the only one) asked
      detail::resume_engine();
    } else {
      EXPECT_EQ(s.code(), StatusCode::kTimeout) << s.to_string();
      EXPECT_NE(s.message().find("not every rank asked"), std::string::npos) << s.to_string();
    }
  }
  // The job goes on.
  Status s = barrier();
  ASSERT_TRUE(s.ok()) << s.to_string();
}

TEST(EnginePause, ShutdownWhileParked) {
  // The last test: mp_main shuts hora down with every engine parked; the shutdown round must
  // still run (resume is implied) and mp_main's exit status shows it did.
  ASSERT_TRUE(detail::pause_engine(kPauseWait).ok());
}

}  // namespace
}  // namespace hora
