// The engine's burst window ends when a caller waits (tensor_queue.h, "Burst end"): a thread
// waiting on a handle whose request is still queued ends it at once; a wait on a handle whose
// request was already taken (the previous step's) does not end the next burst; a zero-timeout
// wait only looks; after a burst a helper runs, only work left or new requests wake the
// background thread. No engine: a TensorQueue and handles whose WaitSignal tells it.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/engine/handle_state.h"
#include "core/engine/tensor_queue.h"
#include "hora/hora.h"

namespace hora {
namespace engine {
namespace {

using std::chrono::milliseconds;

struct Queued {
  std::shared_ptr<detail::HandleState> state;
  Handle handle;
};

// What the engine tells the queue when a thread waits (Engine::waiting), without helping.
class QueueSignal final : public detail::WaitSignal {
 public:
  explicit QueueSignal(TensorQueue& q) : q_(q) {}
  bool waiting() override {
    q_.waiting();
    return false;
  }
  void help(const detail::HandleState&) override {}

 private:
  TensorQueue& q_;
};

Queued enqueue(TensorQueue& q, const std::string& name) {
  static std::vector<std::unique_ptr<QueueSignal>> signals;  // outlive every handle
  signals.push_back(std::make_unique<QueueSignal>(q));
  Queued out;
  out.state = std::make_shared<detail::HandleState>(name, 1, 1.0, signals.back().get());
  out.handle = detail::HandleAccess::make(out.state);
  Entry e;
  e.request.name = name;
  e.handle = out.state;
  std::vector<Entry> one;
  one.push_back(std::move(e));
  EXPECT_TRUE(q.enqueue(std::move(one)).ok());
  return out;
}

TEST(BurstEnd, AWaitOnAQueuedRequestEndsTheBurstAtOnce) {
  TensorQueue q;
  Queued a = enqueue(q, "a");
  std::thread waiter([&] { EXPECT_TRUE(a.handle.wait().ok()); });
  size_t fresh = 0;
  const auto t0 = Clock::now();
  // Far longer than the waiter needs to start: returning early means the wait ended it.
  EXPECT_TRUE(q.wait_in_burst(t0 + std::chrono::seconds(20), &fresh));
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(10));
  EXPECT_EQ(fresh, 1u);
  EXPECT_EQ(q.take_new().size(), 1u);
  a.state->complete(Status::OK());
  waiter.join();
}

TEST(BurstEnd, AWaitOnATakenRequestDoesNotEndTheNextBurst) {
  TensorQueue q;
  Queued a = enqueue(q, "a");
  EXPECT_EQ(q.take_new().size(), 1u);  // the round took it
  // The caller waits for the previous step's handle, then enqueues the next step.
  EXPECT_EQ(a.handle.wait(milliseconds(20)).code(), StatusCode::kTimeout);
  Queued b = enqueue(q, "b");
  size_t fresh = 0;
  EXPECT_FALSE(q.wait_in_burst(Clock::now() + milliseconds(30), &fresh));
  EXPECT_EQ(fresh, 1u);
  a.state->complete(Status::OK());
  b.state->complete(Status::OK());
}

TEST(BurstEnd, AZeroTimeoutWaitOrADoneHandleOnlyLooks) {
  TensorQueue q;
  Queued done = enqueue(q, "done");
  done.state->complete(Status::OK());
  EXPECT_TRUE(done.handle.wait().ok());  // complete: nothing to wait for
  Queued a = enqueue(q, "a");
  EXPECT_EQ(a.handle.wait(milliseconds(0)).code(), StatusCode::kTimeout);
  size_t fresh = 0;
  EXPECT_FALSE(q.wait_in_burst(Clock::now() + milliseconds(30), &fresh));
  EXPECT_EQ(fresh, 2u);
  a.state->complete(Status::OK());
}

TEST(BurstEnd, ShutdownEndsTheBurstAndTakeNewResetsIt) {
  TensorQueue q;
  Queued a = enqueue(q, "a");
  std::thread waiter([&] { EXPECT_TRUE(a.handle.wait().ok()); });
  size_t fresh = 0;
  EXPECT_TRUE(q.wait_in_burst(Clock::now() + std::chrono::seconds(20), &fresh));
  EXPECT_EQ(q.take_new().size(), 1u);
  Queued b = enqueue(q, "b");
  EXPECT_FALSE(q.wait_in_burst(Clock::now() + milliseconds(20), &fresh));  // reset
  q.request_shutdown();
  EXPECT_TRUE(q.wait_in_burst(Clock::now() + std::chrono::seconds(20), &fresh));
  a.state->complete(Status::OK());
  b.state->complete(Status::OK());
  waiter.join();
}

// wake() (a helping caller left work, a pause) ends a burst window too, and is left for the
// next wait_for_work to consume: the thread may sleep through the whole cycle time in one
// window when it expects a helper (Engine::wait_for_round).
TEST(BurstEnd, AWakeUpEndsTheBurstAndIsLeftForTheNextWait) {
  TensorQueue q;
  Queued a = enqueue(q, "a");
  std::thread leaver([&] {
    std::this_thread::sleep_for(milliseconds(10));
    q.wake();
  });
  size_t fresh = 0;
  const auto t0 = Clock::now();
  EXPECT_TRUE(q.wait_in_burst(t0 + std::chrono::seconds(20), &fresh));
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(10));
  leaver.join();
  EXPECT_EQ(q.take_new().size(), 1u);
  EXPECT_TRUE(q.wait_for_work(Clock::now() + std::chrono::seconds(20)));  // the wake-up
  EXPECT_FALSE(q.wait_for_work(Clock::now() + milliseconds(10)));         // consumed
  a.state->complete(Status::OK());
}

// After a burst a helping caller runs (Engine::wait_for_round): the background thread sleeps
// through the helper's take, and wakes for a wake() (the helper left work), for requests
// enqueued after that take, for shutdown, or at its deadline.
TEST(BurstEnd, AfterAHelpedBurstOnlyLeftWorkOrNewRequestsWake) {
  using AfterHelp = TensorQueue::AfterHelp;
  TensorQueue q;
  Queued a = enqueue(q, "a");
  uint64_t takes = q.takes();
  // The helper has not taken the burst yet: its requests do not end the wait.
  EXPECT_EQ(q.wait_after_help(takes, Clock::now() + milliseconds(20)), AfterHelp::kTimeout);
  std::thread helper([&] {
    std::this_thread::sleep_for(milliseconds(10));
    EXPECT_EQ(q.take_new().size(), 1u);  // its round
  });
  EXPECT_EQ(q.wait_after_help(takes, Clock::now() + milliseconds(60)), AfterHelp::kTimeout);
  helper.join();
  // A request enqueued after the helper's take is a new burst.
  std::thread producer([&] {
    std::this_thread::sleep_for(milliseconds(10));
    Queued b = enqueue(q, "b");
    b.state->complete(Status::OK());
  });
  const auto t0 = Clock::now();
  EXPECT_EQ(q.wait_after_help(takes, t0 + std::chrono::seconds(20)), AfterHelp::kFresh);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(10));
  producer.join();
  // The helper left work: wake() ends the wait (and is consumed by it).
  EXPECT_EQ(q.take_new().size(), 1u);
  takes = q.takes();
  std::thread leaver([&] {
    std::this_thread::sleep_for(milliseconds(10));
    q.wake();
  });
  EXPECT_EQ(q.wait_after_help(takes, Clock::now() + std::chrono::seconds(20)), AfterHelp::kWoken);
  leaver.join();
  EXPECT_EQ(q.wait_after_help(takes, Clock::now() + milliseconds(10)), AfterHelp::kTimeout);
  q.request_shutdown();
  EXPECT_EQ(q.wait_after_help(takes, Clock::now() + std::chrono::seconds(20)), AfterHelp::kWoken);
  a.state->complete(Status::OK());
}

}  // namespace
}  // namespace engine
}  // namespace hora
