// allreduce_async's lease on the engine (core/engine_access.h: EngineLease) against
// shutdown() and init() from another thread: callers that enqueue while the runtime shuts
// down either enqueue into the running engine (their handles complete, successfully or with
// shutdown's error) or are refused as after shutdown; nothing crashes, nothing hangs, and the
// next init serves them again; and shutdown waits for a lease held before it began. One rank,
// no launcher. Run under ASan and TSan in CI.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/engine_access.h"
#include "hora/hora.h"

namespace hora {
namespace {

TensorView view(std::vector<float>& v) {
  return TensorView::flat(v.data(), DataType::kFloat32, static_cast<int64_t>(v.size())).value();
}

struct Outcomes {
  int ok = 0;
  int refused = 0;  // failed precondition: after shutdown, or failed by it
  std::string unexpected;
};

// Enqueues and waits allreduces named `prefix`.0, .1, ... until `stop`.
void enqueue_until(const std::string& prefix, const std::atomic<bool>& stop, Outcomes* out) {
  std::vector<float> x(8, 1.f);
  for (int i = 0; !stop.load(); ++i) {
    const Status s = allreduce_async(prefix + "." + std::to_string(i), view(x), view(x)).wait();
    if (s.ok()) {
      ++out->ok;
    } else if (s.code() == StatusCode::kFailedPrecondition) {
      ++out->refused;
    } else if (out->unexpected.empty()) {
      out->unexpected = s.to_string();
    }
  }
}

TEST(EngineLease, ShutdownAndInitWhileOtherThreadsEnqueue) {
  ASSERT_TRUE(init().ok());
  constexpr int kThreads = 4;
  std::atomic<bool> stop{false};
  std::vector<Outcomes> outcomes(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back(enqueue_until, "lease.t" + std::to_string(t), std::cref(stop),
                         &outcomes[t]);
  for (int cycle = 0; cycle < 5; ++cycle) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(shutdown().ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_TRUE(init().ok());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop.store(true);
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(outcomes[t].unexpected, "") << "thread " << t;
    EXPECT_GT(outcomes[t].ok, 0) << "thread " << t;
  }
  // Served again after the last init.
  std::vector<float> x(8, 2.f);
  ASSERT_TRUE(allreduce("lease.after", view(x), view(x)).ok());
  for (float v : x) EXPECT_EQ(v, 2.f);
  ASSERT_TRUE(shutdown().ok());
  const Status late = allreduce_async("lease.late", view(x), view(x)).wait();
  EXPECT_EQ(late.code(), StatusCode::kFailedPrecondition) << late.to_string();
  EXPECT_NE(late.message().find("after hora::shutdown()"), std::string::npos) << late.message();
}

// shutdown() clears the engine for new leases at once, and stops and releases it only once the
// leases taken before were given back.
TEST(EngineLease, ShutdownWaitsForTheLeasesHeld) {
  ASSERT_TRUE(init().ok());
  auto held = std::make_unique<detail::EngineLease>();
  ASSERT_NE(held->get(), nullptr);
  std::atomic<bool> shut{false};
  std::thread closer([&] {
    EXPECT_TRUE(shutdown().ok());
    shut.store(true);
  });
  // A lease taken once shutdown began sees no engine; the held one still has it.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool cleared = false;
  while (!cleared && std::chrono::steady_clock::now() < until) {
    cleared = detail::EngineLease().get() == nullptr;
    if (!cleared) std::this_thread::yield();
  }
  EXPECT_TRUE(cleared);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(shut.load()) << "shutdown returned while a lease was held";
  held.reset();
  closer.join();
  EXPECT_TRUE(shut.load());
}

}  // namespace
}  // namespace hora
