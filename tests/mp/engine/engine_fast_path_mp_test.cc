// The engine's fast paths under a real launcher (docs/architecture.md, "The engine's fast
// paths"): a rank whose last round agreed part of a step goes straight into the next round
// rather than sleeping a cycle time; lone blocking calls; the batched enqueue
// (allreduce_async_batch) gives the same results as single calls and fails every handle,
// naming the tensor, on a repeated name or a bad tensor. Registered with
// HORA_CYCLE_TIME_MS=200, so a rank that slept a cycle time per round would be seen.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "hora/hora.h"

namespace hora {
namespace {

using Clock = std::chrono::steady_clock;

TensorView view(std::vector<float>& v) {
  return TensorView::flat(v.data(), DataType::kFloat32, static_cast<int64_t>(v.size())).value();
}

float input(int t, size_t i, int r) { return static_cast<float>((r + 1) * (i % 5 + 1) + t); }
float expected_sum(int t, size_t i, int n) {
  return static_cast<float>((i % 5 + 1) * (n * (n + 1) / 2) + n * t);
}

struct Step {
  std::vector<std::vector<float>> in, out;
  std::vector<std::string> names;
  explicit Step(int tensors, const std::string& prefix) : in(tensors), out(tensors) {
    for (int t = 0; t < tensors; ++t) {
      const size_t n = 1 + static_cast<size_t>(t * 13) % 200;
      for (size_t i = 0; i < n; ++i) in[t].push_back(input(t, i, rank()));
      out[t].assign(n, -1.f);
      names.push_back(prefix + std::to_string(t));
    }
  }
  void check(const char* what) const {
    for (size_t t = 0; t < out.size(); ++t)
      for (size_t i = 0; i < out[t].size(); ++i)
        ASSERT_EQ(out[t][i], expected_sum(static_cast<int>(t), i, size()))
            << what << ": " << names[t] << "[" << i << "]";
  }
};

TEST(EngineFastPath, SkewedStepDoesNotWaitACycleTimePerRound) {
  // Rank r enqueues the second half of each step 20 ms after the first (rank 0 at once): the
  // first round agrees the first half, and ranks still holding the second half go straight
  // into the next round. Sleeping HORA_CYCLE_TIME_MS (200 ms) there would make 5 steps last
  // at least 1 s.
  Step step(40, "skew.");
  const int steps = 5;
  std::vector<Handle> handles(step.names.size());
  for (int s = 0; s < 2; ++s) {  // warm-up: the names reach the response cache
    for (size_t t = 0; t < handles.size(); ++t)
      handles[t] =
          allreduce_async(step.names[t], view(step.in[t]), view(step.out[t]), ReduceOp::kSum);
    for (Handle& h : handles) ASSERT_TRUE(h.wait().ok());
  }
  ASSERT_TRUE(barrier().ok());
  const auto t0 = Clock::now();
  for (int s = 0; s < steps; ++s) {
    for (size_t t = 0; t < handles.size(); ++t) {
      if (t == handles.size() / 2 && rank() > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      handles[t] =
          allreduce_async(step.names[t], view(step.in[t]), view(step.out[t]), ReduceOp::kSum);
    }
    for (Handle& h : handles) ASSERT_TRUE(h.wait().ok()) << h.wait().to_string();
    step.check("skewed step");
  }
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  EXPECT_LT(ms, 1000.0) << steps << " skewed steps";
}

TEST(EngineFastPath, LoneBlockingAllreducesGoAtOnce) {
  // Each call is alone: a blocking call whose caller waits must not wait for more requests.
  std::vector<float> v(1), out(1);
  const auto t0 = Clock::now();
  for (int i = 0; i < 20; ++i) {
    v[0] = static_cast<float>(rank() + i);
    ASSERT_TRUE(allreduce("lone", view(v), view(out), ReduceOp::kSum).ok());
    ASSERT_EQ(out[0], static_cast<float>(size() * (size() - 1) / 2 + size() * i));
  }
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  EXPECT_LT(ms, 20 * 200.0 / 2) << "20 lone blocking allreduces";
}

TEST(EngineFastPath, BatchedEnqueueMatchesSingleCallsAndHitsTheCache) {
  Step step(60, "batch.");
  AllreduceOptions o;
  o.op = ReduceOp::kSum;
  const EngineStats before = engine_stats();
  for (int s = 0; s < 4; ++s) {
    std::vector<TensorView> ins, outs;
    for (size_t t = 0; t < step.names.size(); ++t) {
      ins.push_back(view(step.in[t]));
      outs.push_back(view(step.out[t]));
    }
    std::vector<Handle> handles = allreduce_async_batch(step.names, ins, outs, o);
    ASSERT_EQ(handles.size(), step.names.size());
    for (size_t t = 0; t < handles.size(); ++t) {
      EXPECT_EQ(handles[t].name(), step.names[t]);
      ASSERT_TRUE(handles[t].wait().ok()) << handles[t].wait().to_string();
    }
    step.check("batch");
  }
  const EngineStats after = engine_stats();
  if (size() > 1) {
    // Steps 2 to 4 were cache hits (60 each).
    EXPECT_GE(after.cache_hits - before.cache_hits, 180);
  }
  // A batch is agreed whole in one round: step 2's list (read from the cache) is repeated by
  // steps 3 and 4, with their own entries (step.check saw each step's own results).
  EXPECT_GE(after.repeated_steps - before.repeated_steps, 2);
  // An empty batch is no error.
  EXPECT_TRUE(allreduce_async_batch({}, {}, {}, o).empty());
}

TEST(EngineFastPath, BatchWithARepeatedNameFailsEveryHandleNamingIt) {
  std::vector<float> a(3, 1.f), b(3, 1.f), c(3, 1.f);
  AllreduceOptions o;
  o.op = ReduceOp::kSum;
  std::vector<Handle> hs = allreduce_async_batch(
      {"dup.x", "dup.y", "dup.x"}, {view(a), view(b), view(c)}, {view(a), view(b), view(c)}, o);
  ASSERT_EQ(hs.size(), 3u);
  for (Handle& h : hs) {
    Status s = h.wait();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("tensor 'dup.x'"), std::string::npos) << s.to_string();
  }
  // Nothing was enqueued: the same names go through now, on every rank.
  hs = allreduce_async_batch({"dup.x", "dup.y"}, {view(a), view(b)}, {view(a), view(b)}, o);
  for (Handle& h : hs) ASSERT_TRUE(h.wait().ok()) << h.wait().to_string();
  EXPECT_EQ(a[0], static_cast<float>(size()));
}

TEST(EngineFastPath, BatchWithABadTensorFailsEveryHandleNamingIt) {
  std::vector<float> a(3, 1.f), b(3, 1.f), small(2, 1.f);
  AllreduceOptions o;
  o.op = ReduceOp::kSum;
  std::vector<Handle> hs =
      allreduce_async_batch({"bad.ok", "bad.short"}, {view(a), view(b)}, {view(a), view(small)}, o);
  ASSERT_EQ(hs.size(), 2u);
  for (Handle& h : hs) {
    Status s = h.wait();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("tensor 'bad.short'"), std::string::npos) << s.to_string();
  }
  EXPECT_EQ(hs[0].name(), "bad.ok");
  // Mismatched list lengths.
  hs = allreduce_async_batch({"len.a", "len.b"}, {view(a)}, {view(a)}, o);
  ASSERT_EQ(hs.size(), 2u);
  EXPECT_EQ(hs[1].wait().code(), StatusCode::kInvalidArgument);
  // Nothing of either was left in flight.
  hs = allreduce_async_batch({"bad.ok", "bad.short"}, {view(a), view(b)}, {view(a), view(b)}, o);
  for (Handle& h : hs) ASSERT_TRUE(h.wait().ok()) << h.wait().to_string();
}

}  // namespace
}  // namespace hora
