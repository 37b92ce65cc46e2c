// The engine's burst window ends when a caller waits (tensor_queue.h, "Burst end"): a thread
// waiting on a handle whose request is still queued ends it at once; a wait on a handle whose
// request was already taken (the previous step's) does not end the next burst; a zero-timeout
// wait only looks. No engine: a TensorQueue and handles whose WaitSignal tells it.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/engine/handle_state.h"
#include "core/engine/tensor_queue.h"
#include "core/hora.h"

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
  out.handle = Handle(out.state);
  Entry e;
  e.request.name = name;
  e.handle = out.state;
  std::vector<Entry> one;
  one.push_back(std::move(e));
  EXPECT_TRUE(q.enqueue(std::move(one)).is_ok());
  return out;
}

TEST(BurstEnd, AWaitOnAQueuedRequestEndsTheBurstAtOnce) {
  TensorQueue q;
  Queued a = enqueue(q, "a");
  std::thread waiter([&] { EXPECT_TRUE(a.handle.wait().is_ok()); });
  size_t fresh = 0;
  const auto t0 = Clock::now();
  // Far longer than the waiter needs to start: returning early means the wait ended it.
  EXPECT_TRUE(q.wait_in_burst(t0 + std::chrono::seconds(20), &fresh));
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(10));
  EXPECT_EQ(fresh, 1u);
  EXPECT_EQ(q.take_new().size(), 1u);
  a.state->complete(Status::ok());
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
  a.state->complete(Status::ok());
  b.state->complete(Status::ok());
}

TEST(BurstEnd, AZeroTimeoutWaitOrADoneHandleOnlyLooks) {
  TensorQueue q;
  Queued done = enqueue(q, "done");
  done.state->complete(Status::ok());
  EXPECT_TRUE(done.handle.wait().is_ok());  // complete: nothing to wait for
  Queued a = enqueue(q, "a");
  EXPECT_EQ(a.handle.wait(milliseconds(0)).code(), StatusCode::kTimeout);
  size_t fresh = 0;
  EXPECT_FALSE(q.wait_in_burst(Clock::now() + milliseconds(30), &fresh));
  EXPECT_EQ(fresh, 2u);
  a.state->complete(Status::ok());
}

TEST(BurstEnd, ShutdownEndsTheBurstAndTakeNewResetsIt) {
  TensorQueue q;
  Queued a = enqueue(q, "a");
  std::thread waiter([&] { EXPECT_TRUE(a.handle.wait().is_ok()); });
  size_t fresh = 0;
  EXPECT_TRUE(q.wait_in_burst(Clock::now() + std::chrono::seconds(20), &fresh));
  EXPECT_EQ(q.take_new().size(), 1u);
  Queued b = enqueue(q, "b");
  EXPECT_FALSE(q.wait_in_burst(Clock::now() + milliseconds(20), &fresh));  // reset
  q.request_shutdown();
  EXPECT_TRUE(q.wait_in_burst(Clock::now() + std::chrono::seconds(20), &fresh));
  a.state->complete(Status::ok());
  b.state->complete(Status::ok());
  waiter.join();
}

}  // namespace
}  // namespace engine
}  // namespace hora
