// Handle and HandleState without an engine: completion callbacks (exactly once, outside the
// mutex, before waiters return, at once when already complete), groups, last_joined, and
// the invalid handle.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/engine/handle_state.h"
#include "hora/hora.h"

namespace hora {
namespace {

using detail::HandleState;

TEST(HandleCallback, RunsOnceOnTheCompletingThreadBeforeWaitReturns) {
  auto state = std::make_shared<HandleState>("t", 1, 1.0);
  Handle h = detail::HandleAccess::make(state);
  std::atomic<int> calls{0};
  std::thread::id ran_on;
  Status seen;
  h.on_complete([&](const Status& s) {
    ++calls;
    ran_on = std::this_thread::get_id();
    seen = s;
    // The mutex is free while the callback runs: it may look at the handle.
    EXPECT_FALSE(h.poll());
  });
  std::atomic<bool> waiter_saw_callback{false};
  std::thread waiter([&] {
    ASSERT_EQ(h.wait(std::chrono::seconds(10)).code(), StatusCode::kRemote);
    waiter_saw_callback = calls.load() == 1;
  });
  std::thread completer([&] { state->complete(Status::remote("peer 3 left")); });
  const std::thread::id completer_id = completer.get_id();
  completer.join();
  waiter.join();
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(ran_on, completer_id);
  EXPECT_EQ(seen.code(), StatusCode::kRemote);
  EXPECT_TRUE(waiter_saw_callback.load());
  state->complete(Status::OK());  // a late part changes nothing and runs nothing
  EXPECT_EQ(calls.load(), 1);
}

TEST(HandleCallback, AlreadyCompleteRunsAtOnceOnTheCaller) {
  Handle h = detail::HandleAccess::make(
      HandleState::failed("bad", Status::invalid_argument("tensor 'bad': no")));
  int calls = 0;
  std::thread::id ran_on;
  h.on_complete([&](const Status& s) {
    ++calls;
    ran_on = std::this_thread::get_id();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  // Another registration on a complete handle runs too (each callback exactly once).
  h.on_complete([&](const Status&) { ++calls; });
  EXPECT_EQ(calls, 2);
}

TEST(HandleCallback, SecondRegistrationReplacesAPendingOne) {
  auto state = std::make_shared<HandleState>("t", 1, 1.0);
  Handle h = detail::HandleAccess::make(state);
  int first = 0, second = 0;
  h.on_complete([&](const Status&) { ++first; });
  h.on_complete([&](const Status&) { ++second; });
  state->complete(Status::OK());
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
  h.on_complete(nullptr);  // an empty callback is allowed and does nothing
}

TEST(HandleCallback, GroupRunsOnceAfterTheLastPartWithTheFirstError) {
  auto state = std::make_shared<HandleState>("g#group", 3, 1.0);
  Handle h = detail::HandleAccess::make(state);
  int calls = 0;
  Status seen;
  h.on_complete([&](const Status& s) {
    ++calls;
    seen = s;
  });
  state->complete(Status::OK());
  state->complete(Status::mismatch("first"));
  EXPECT_EQ(calls, 0);
  EXPECT_FALSE(h.poll());
  state->complete(Status::remote("second"));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen.message(), "first");
  EXPECT_TRUE(h.poll());
}

TEST(HandleCallback, ConcurrentRegistrationAndCompletionRunExactlyOnce) {
  for (int round = 0; round < 200; ++round) {
    auto state = std::make_shared<HandleState>("race", 1, 1.0);
    Handle h = detail::HandleAccess::make(state);
    std::atomic<int> calls{0};
    std::thread a([&] { h.on_complete([&](const Status&) { ++calls; }); });
    std::thread b([&] { state->complete(Status::OK()); });
    a.join();
    b.join();
    ASSERT_EQ(calls.load(), 1) << "round " << round;
  }
}

TEST(HandleCallback, InvalidHandleRunsAtOnceWithFailedPrecondition) {
  Handle h;
  Status seen;
  h.on_complete([&](const Status& s) { seen = s; });
  EXPECT_EQ(seen.code(), StatusCode::kFailedPrecondition);
  h.on_complete(nullptr);
  EXPECT_EQ(h.last_joined(), -1);
}

TEST(HandleLastJoined, MinusOneUntilKnownAndSeenByTheCompletionCallback) {
  auto state = std::make_shared<HandleState>("hora.join", 1, 1.0);
  Handle h = detail::HandleAccess::make(state);
  EXPECT_EQ(h.last_joined(), -1);
  int in_callback = -1;
  h.on_complete([&](const Status&) { in_callback = h.last_joined(); });
  {
    MutexLock lock(&state->mu);
    state->join_result = 2;  // as the executor sets it, before completing
  }
  state->complete(Status::OK());
  EXPECT_EQ(in_callback, 2);
  EXPECT_EQ(h.last_joined(), 2);
}

// A step waits on hundreds of handles that are complete by then: once done, poll() and wait()
// answer from the state's done flag, without taking its mutex (here held by another thread).
TEST(HandleDone, ACompleteHandleAnswersWithoutItsMutex) {
  auto state = std::make_shared<HandleState>("t", 2, 1.0);
  Handle h = detail::HandleAccess::make(state);
  state->complete(Status::OK());
  EXPECT_FALSE(h.poll());
  EXPECT_FALSE(state->is_done());  // one part of two
  state->complete(Status::remote("peer 1 left"));
  ASSERT_TRUE(state->is_done());
  state->mu.lock();
  auto answers = std::async(std::launch::async, [&] {
    return std::make_tuple(h.poll(), h.wait().code(), h.wait(std::chrono::milliseconds(0)).code(),
                           h.wait(std::chrono::seconds(5)).code());
  });
  const bool answered = answers.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  state->mu.unlock();
  ASSERT_TRUE(answered) << "a complete handle's poll or wait waited for its mutex";
  const auto [polled, waited, looked, timed] = answers.get();
  EXPECT_TRUE(polled);
  EXPECT_EQ(waited, StatusCode::kRemote);
  EXPECT_EQ(looked, StatusCode::kRemote);
  EXPECT_EQ(timed, StatusCode::kRemote);
}

// A single-part handle completed OK while nobody watches it goes done with one atomic
// operation; a thread already blocked in wait() has watched it first, so it is woken.
TEST(HandleDone, AnUnwatchedHandleCompletesWithoutItsMutexAndAWaiterIsWoken) {
  auto quiet = std::make_shared<HandleState>("quiet", 1, 1.0);
  quiet->mu.lock();  // held elsewhere: completion and every look at it must not need it
  auto completed = std::async(std::launch::async, [&] {
    quiet->complete(Status::OK());
    return detail::HandleAccess::make(quiet).poll();
  });
  const bool finished = completed.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  quiet->mu.unlock();
  ASSERT_TRUE(finished) << "an unwatched handle's completion waited for its mutex";
  EXPECT_TRUE(completed.get());
  EXPECT_TRUE(detail::HandleAccess::make(quiet).wait().ok());
  int calls = 0;
  detail::HandleAccess::make(quiet).on_complete([&](const Status& s) {  // complete: runs at once
    EXPECT_TRUE(s.ok());
    ++calls;
  });
  EXPECT_EQ(calls, 1);
  quiet->complete(Status::remote("late"));  // a late completion changes nothing
  EXPECT_TRUE(detail::HandleAccess::make(quiet).wait().ok());

  for (int round = 0; round < 50; ++round) {
    auto watched = std::make_shared<HandleState>("watched", 1, 1.0);
    Handle h = detail::HandleAccess::make(watched);
    auto waited = std::async(std::launch::async, [&] { return h.wait().code(); });
    // The waiter watches the state before it blocks on the condition variable.
    while (watched->phase.load() != HandleState::kWatched) std::this_thread::yield();
    watched->complete(Status::OK());
    ASSERT_EQ(waited.wait_for(std::chrono::seconds(30)), std::future_status::ready)
        << "round " << round << ": a waiter was not woken by completion";
    EXPECT_EQ(waited.get(), StatusCode::kOk);
  }
  // A timed wait that gave up leaves the state watched: completion still marks it done.
  auto left = std::make_shared<HandleState>("left", 1, 1.0);
  EXPECT_EQ(detail::HandleAccess::make(left).wait(std::chrono::milliseconds(1)).code(),
            StatusCode::kTimeout);
  left->complete(Status::OK());
  EXPECT_TRUE(detail::HandleAccess::make(left).poll());
  EXPECT_TRUE(detail::HandleAccess::make(left).wait().ok());
}

TEST(HandleName, EveryLengthReadsBackFromEveryThread) {
  // Empty, a model's parameter name, the inline capacity and one past it, and a long one
  // (the heap): the same bytes back, from Handle::name() and from eight threads at once
  // (the std::string is made on the first ask).
  for (size_t size : {size_t{0}, size_t{31}, size_t{95}, size_t{96}, size_t{97}, size_t{4000}}) {
    std::string name(size, 'x');
    for (size_t i = 0; i < size; ++i) name[i] = static_cast<char>('a' + i % 26);
    auto state = std::make_shared<HandleState>(name, 1, 1.0);
    std::vector<std::future<std::string>> reads;
    for (int t = 0; t < 8; ++t)
      reads.push_back(std::async(std::launch::async, [&] { return state->name(); }));
    for (auto& r : reads) EXPECT_EQ(r.get(), name) << size;
    EXPECT_EQ(detail::HandleAccess::make(state).name(), name) << size;
    EXPECT_EQ(&state->name(), &state->name()) << "one string, made once";
  }
  // A failed handle names its tensor too, as does the timeout of a wait on it.
  EXPECT_EQ(detail::HandleAccess::make(
                HandleState::failed("model.layers.17.weight.grad", Status::internal("x")))
                .name(),
            "model.layers.17.weight.grad");
  auto pending = std::make_shared<HandleState>("model.layers.3.bias.grad", 1, 1.0);
  const Status timed_out = detail::HandleAccess::make(pending).wait(std::chrono::milliseconds(1));
  EXPECT_EQ(timed_out.code(), StatusCode::kTimeout);
  EXPECT_NE(timed_out.message().find("'model.layers.3.bias.grad'"), std::string::npos)
      << timed_out.to_string();
}

}  // namespace
}  // namespace hora
