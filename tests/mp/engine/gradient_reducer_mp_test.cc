// GradientReducer under a real launcher: hooks from three threads at once in a different order
// on every rank, backward_passes_per_step 2, groups, unused parameters flushed, compression
// with aggregated averaging, a step's first error kept while the rest still completes,
// synchronize with a timeout that keeps the step pending, misuse, and the destructor waiting
// for what is in flight. Every rank runs every test (mp_main.cc initialises hora).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "collectives/rendezvous/store.h"
#include "core/context.h"
#include "core/context_access.h"
#include "hora/gradient_reducer.h"
#include "hora/hora.h"

namespace hora {
namespace {

TensorView flat(std::vector<float>& v) {
  return TensorView::flat(v.data(), DataType::kFloat32, static_cast<int64_t>(v.size())).value();
}

// A model's gradients: parameter i has 1 + (37 i mod 500) elements.
struct Model {
  explicit Model(int count) : grads(count) {
    for (int i = 0; i < count; ++i) {
      names.push_back("p" + std::to_string(i));
      grads[i].resize(1 + (i * 37) % 500);
    }
  }
  std::vector<std::string> names;
  std::vector<std::vector<float>> grads;
};

// Pass k's contribution of rank r to element j of parameter i; small integers, so every sum
// (and every half-type cast of them) is exact.
float contribution(int r, int i, size_t j, int k) {
  return static_cast<float>(r + 1 + static_cast<int>((i + j + k) % 5));
}
// What an unused parameter holds when the test flushes it.
float unused_value(int r, size_t j) { return static_cast<float>(r + static_cast<int>(j % 3)); }
bool is_unused(int i) { return i % 7 == 6; }

// One backward pass: three threads add pass k's contribution and report, each its third of
// the used parameters, in an order that differs per rank, pass and step.
void backward_pass(GradientReducer& reducer, Model& m, int k, int step) {
  const int r = rank();
  std::vector<int> order(m.grads.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(977 * r + 31 * k + step);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (size_t n = t; n < order.size(); n += 3) {
        const int i = order[n];
        if (is_unused(i)) continue;
        std::vector<float>& g = m.grads[i];
        for (size_t j = 0; j < g.size(); ++j) g[j] += contribution(r, i, j, k);
        Status s = reducer.gradient_ready(static_cast<size_t>(i), flat(g));
        EXPECT_TRUE(s.ok()) << s.to_string();
      }
    });
  }
  for (std::thread& t : threads) t.join();
}

// The adapter's part before synchronize: every parameter not enqueued yet is flushed, the
// unused ones with what they hold (the others were counted and are waiting for their group,
// or for synchronize when overlap is off).
void flush_unused(GradientReducer& reducer, Model& m) {
  for (size_t i : reducer.unreported()) {
    std::vector<float>& g = m.grads[i];
    if (is_unused(static_cast<int>(i)))
      for (size_t j = 0; j < g.size(); ++j) g[j] = unused_value(rank(), j);
    ASSERT_TRUE(reducer.flush(i, flat(g)).ok());
  }
}

// The sum over ranks of what each rank had in parameter i, element j, after both passes.
float summed(int i, size_t j) {
  float s = 0;
  for (int p = 0; p < size(); ++p)
    s += is_unused(i) ? unused_value(p, j) : contribution(p, i, j, 0) + contribution(p, i, j, 1);
  return s;
}

void run_steps(GradientReducerOptions options, int steps,
               const std::function<float(float)>& expected_of_sum) {
  Model m(40);
  auto reducer = GradientReducer::create(m.names, options).value();
  for (int step = 0; step < steps; ++step) {
    for (std::vector<float>& g : m.grads) std::fill(g.begin(), g.end(), 0.f);
    backward_pass(*reducer, m, 0, step);
    EXPECT_TRUE(reducer->has_pending());
    backward_pass(*reducer, m, 1, step);
    flush_unused(*reducer, m);
    EXPECT_TRUE(reducer->unreported().empty());
    Status s = reducer->synchronize();
    ASSERT_TRUE(s.ok()) << s.to_string();
    EXPECT_FALSE(reducer->has_pending());
    for (size_t i = 0; i < m.grads.size(); ++i)
      for (size_t j = 0; j < m.grads[i].size(); ++j)
        ASSERT_EQ(m.grads[i][j], expected_of_sum(summed(static_cast<int>(i), j)))
            << m.names[i] << "[" << j << "] step " << step;
  }
}

TEST(GradientReducerMp, ThreeThreadsTwoPassesGroupsAndUnusedParameters) {
  GradientReducerOptions o;
  o.op = ReduceOp::kSum;
  o.backward_passes_per_step = 2;
  o.name_prefix = "gr.sum/";
  o.groups = {{1, 2, 3}, {10, 11}, {20, 25, 30}, {5, 6}};  // 6 is unused: its group waits
  const EngineStats before = engine_stats();
  run_steps(o, 3, [](float sum) { return sum; });
  const EngineStats after = engine_stats();
  EXPECT_GT(after.cache_hits, before.cache_hits) << "later steps reuse the names";
}

TEST(GradientReducerMp, CompressedAverageOfAggregatedPasses) {
  for (Compression c : {Compression::kFloat16, Compression::kBFloat16}) {
    GradientReducerOptions o;
    o.op = ReduceOp::kAverage;
    o.compression = c;
    o.backward_passes_per_step = 2;
    o.average_aggregated_gradients = true;
    o.name_prefix = std::string("gr.") + compression_name(c) + "/";
    o.groups = {{0, 1}};
    // The engine sums halves of the sum (exact in the half type), then scales by 1/size in
    // float32 after the cast back.
    const float inv = static_cast<float>(1.0 / size());
    run_steps(o, 2, [inv](float sum) { return (sum * 0.5f) * inv; });
  }
}

TEST(GradientReducerMp, NoOverlapEnqueuesEverythingInSynchronize) {
  GradientReducerOptions o;
  o.op = ReduceOp::kSum;
  o.backward_passes_per_step = 2;
  o.overlap_backward = false;
  o.name_prefix = "gr.late/";
  o.groups = {{3, 4}};
  run_steps(o, 1, [](float sum) { return sum; });
}

TEST(GradientReducerMp, FirstErrorIsKeptAndEveryOtherGradientStillReduced) {
  if (size() < 2) GTEST_SKIP() << "needs two ranks to disagree";
  GradientReducerOptions o;
  o.op = ReduceOp::kSum;
  o.name_prefix = "gr.err/";
  auto reducer = GradientReducer::create({"a", "b", "c"}, o).value();
  std::vector<float> a(rank() == 1 ? 5 : 4, 1.f), b(6, 2.f), c(3, 3.f);
  // The last rank to submit 'a' may find it failed already (the engine decides as soon as
  // every rank submitted): gradient_ready then reports the mismatch too.
  Status ready = reducer->gradient_ready(0, flat(a));
  if (!ready.ok()) {
    EXPECT_EQ(ready.code(), StatusCode::kMismatch) << ready.to_string();
  }
  ASSERT_TRUE(reducer->gradient_ready(1, flat(b)).ok());
  ASSERT_TRUE(reducer->gradient_ready(2, flat(c)).ok());
  Status s = reducer->synchronize();
  EXPECT_EQ(s.code(), StatusCode::kMismatch) << s.to_string();
  EXPECT_NE(s.message().find("allreduce of 'gr.err/a'"), std::string::npos) << s.message();
  EXPECT_FALSE(reducer->has_pending());
  for (float v : b) EXPECT_EQ(v, 2.f * size());
  for (float v : c) EXPECT_EQ(v, 3.f * size());
  // The next step starts clean.
  std::vector<float> a2(4, 1.f);
  ASSERT_TRUE(reducer->flush(0, flat(a2)).ok());
  ASSERT_TRUE(reducer->flush(1, flat(b)).ok());
  ASSERT_TRUE(reducer->flush(2, flat(c)).ok());
  ASSERT_TRUE(reducer->synchronize().ok());
  for (float v : a2) EXPECT_EQ(v, static_cast<float>(size()));
}

TEST(GradientReducerMp, SynchronizeWithATimeoutKeepsTheStepPending) {
  GradientReducerOptions o;
  o.op = ReduceOp::kSum;
  o.name_prefix = "gr.slice/";
  auto reducer = GradientReducer::create({"w", "b"}, o).value();
  std::vector<float> w(100, 1.f), b(3, 2.f);
  collectives::Store& store = detail::context()->store();
  const std::string key = "test/gradient_reducer/sliced";
  if (rank() == 0) {
    ASSERT_TRUE(reducer->gradient_ready(0, flat(w)).ok());
    if (size() > 1) {
      // The others report only after this rank's first slice ran out.
      Status s = reducer->synchronize(std::chrono::milliseconds(20));
      EXPECT_EQ(s.code(), StatusCode::kTimeout) << s.to_string();
      EXPECT_NE(s.message().find("call synchronize() again"), std::string::npos) << s.message();
      EXPECT_TRUE(reducer->has_pending());
      EXPECT_TRUE(reducer->unreported().size() == 1u);  // 'b'
      ASSERT_TRUE(store.set(key, {1}).ok());
    }
    ASSERT_TRUE(reducer->flush(1, flat(b)).ok());
  } else {
    ASSERT_TRUE(store.get(key, Deadline::after_seconds(60)).ok());
    ASSERT_TRUE(reducer->gradient_ready(0, flat(w)).ok());
    ASSERT_TRUE(reducer->flush(1, flat(b)).ok());
  }
  Status s;
  do {
    s = reducer->synchronize(std::chrono::milliseconds(10));  // slices, as a Ctrl-C poll would
  } while (s.code() == StatusCode::kTimeout);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_FALSE(reducer->has_pending());
  for (float v : w) ASSERT_EQ(v, static_cast<float>(size()));
  for (float v : b) ASSERT_EQ(v, 2.f * size());
}

TEST(GradientReducerMp, MisuseIsAnErrorAndTheStepStillCompletes) {
  GradientReducerOptions o;
  o.name_prefix = "gr.misuse/";
  auto reducer = GradientReducer::create({"a", "b"}, o).value();
  std::vector<float> a(4, 1.f), b(2, 1.f);
  ASSERT_TRUE(reducer->gradient_ready("a", flat(a)).ok());
  Status s = reducer->gradient_ready("a", flat(a));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("'a' was computed more than backward_passes_per_step (1)"),
            std::string::npos)
      << s.message();
  s = reducer->gradient_ready("c", flat(a));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'c'"), std::string::npos) << s.message();
  std::vector<int32_t> ints(2);
  GradientReducerOptions compressed = o;
  compressed.compression = Compression::kFloat16;
  compressed.name_prefix = "gr.misuse.c/";
  auto c = GradientReducer::create({"i"}, compressed).value();
  s = c->gradient_ready(0, TensorView::flat(ints.data(), DataType::kInt32, 2).value());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'i' is int32"), std::string::npos) << s.message();
  ASSERT_TRUE(reducer->flush(1, flat(b)).ok());
  ASSERT_TRUE(reducer->synchronize().ok());   // the misuse did not poison the step
  for (float v : a) EXPECT_FLOAT_EQ(v, 1.f);  // average of ones
}

TEST(GradientReducerMp, DestructorWaitsForWhatIsInFlight) {
  std::vector<float> g(1000, 1.f);
  {
    GradientReducerOptions o;
    o.op = ReduceOp::kSum;
    o.name_prefix = "gr.dtor/";
    auto reducer = GradientReducer::create({"g"}, o).value();
    ASSERT_TRUE(reducer->gradient_ready(0, flat(g)).ok());
  }  // no synchronize: the destructor waits, so `g` is safe to read (and free) afterwards
  for (float v : g) ASSERT_EQ(v, static_cast<float>(size()));
}

}  // namespace
}  // namespace hora
