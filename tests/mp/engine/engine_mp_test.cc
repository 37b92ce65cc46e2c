// The engine under a real launcher: named async collectives from several threads in a
// different order on every rank, the response cache, fusion, every mismatch kind, duplicate
// names, join, the other collectives, and shutdown / re-init. Every rank runs every test
// (mp_main.cc initialises hora first).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "hora/hora.h"

namespace hora {
namespace {

TensorView view(std::vector<float>& v, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  return TensorView::make(v.data(), DataType::kFloat32, shape).value();
}

// Closed-form input of tensor t, element i, on rank r; the sum over ranks is exact in float.
float input(int t, size_t i, int r) { return static_cast<float>((r + 1) * (i % 7 + 1) + t % 3); }
float expected_sum(int t, size_t i, int n) {
  return static_cast<float>((i % 7 + 1) * (n * (n + 1) / 2) + n * (t % 3));
}

struct Tensor {
  std::string name;
  std::vector<float> in, out;
  Handle handle;
};

// Hundreds of tensors, enqueued from three threads in an order that differs per rank.
void run_step(std::vector<Tensor>& tensors, int step) {
  const int r = rank();
  std::vector<int> order(tensors.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(1234 + 17 * r + step);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::thread> threads;
  for (int th = 0; th < 3; ++th) {
    threads.emplace_back([&, th] {
      for (size_t k = th; k < order.size(); k += 3) {
        Tensor& t = tensors[order[k]];
        t.handle = allreduce_async(t.name, view(t.in), view(t.out), ReduceOp::kSum);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (size_t t = 0; t < tensors.size(); ++t) {
    ASSERT_TRUE(tensors[t].handle.wait().ok()) << tensors[t].handle.wait().to_string();
    for (size_t i = 0; i < tensors[t].out.size(); ++i)
      ASSERT_EQ(tensors[t].out[i], expected_sum(static_cast<int>(t), i, size()))
          << tensors[t].name << "[" << i << "] step " << step;
  }
}

TEST(EngineMp, HundredsOfTensorsAnyOrderManyThreadsThenCacheHits) {
  std::vector<Tensor> tensors(300);
  for (int t = 0; t < 300; ++t) {
    tensors[t].name = "grad/" + std::to_string(t);
    const size_t n = 1 + (t * 37) % 3000;
    tensors[t].in.resize(n);
    tensors[t].out.assign(n, -1.f);
    for (size_t i = 0; i < n; ++i) tensors[t].in[i] = input(t, i, rank());
  }
  run_step(tensors, 0);
  const EngineStats before = engine_stats();
  run_step(tensors, 1);
  run_step(tensors, 2);
  const EngineStats after = engine_stats();
  const char* capacity = std::getenv("HORA_CACHE_CAPACITY");
  if (capacity == nullptr || std::atoi(capacity) >= 300) {
    // Every tensor of steps 1 and 2 was agreed through the cache, none through the coordinator.
    EXPECT_EQ(after.cache_hits - before.cache_hits, 600);
    EXPECT_EQ(after.coordinated - before.coordinated, 0);
  } else {
    // A cache smaller than a step: it keeps evicting, and the values are still right.
    EXPECT_GT(after.cache_evictions, before.cache_evictions);
  }
}

TEST(EngineMp, GroupIsFusedIntoOneBucket) {
  std::vector<std::vector<float>> ins(50), outs(50);
  std::vector<std::string> names;
  std::vector<TensorView> in_views, out_views;
  for (int t = 0; t < 50; ++t) {
    ins[t].resize(100 + t);
    outs[t].assign(100 + t, 0.f);
    for (size_t i = 0; i < ins[t].size(); ++i) ins[t][i] = input(t, i, rank());
    names.push_back("group/" + std::to_string(t));
    in_views.push_back(view(ins[t]));
    out_views.push_back(view(outs[t]));
  }
  for (int step = 0; step < 2; ++step) {
    const EngineStats before = engine_stats();
    Handle h = grouped_allreduce_async(names, in_views, out_views, ReduceOp::kSum);
    ASSERT_TRUE(h.wait().ok()) << h.wait().to_string();
    const EngineStats after = engine_stats();
    EXPECT_EQ(after.buckets - before.buckets, 1) << "step " << step;
    EXPECT_EQ(after.fused_tensors - before.fused_tensors, 50) << "step " << step;
    for (int t = 0; t < 50; ++t)
      for (size_t i = 0; i < outs[t].size(); ++i) ASSERT_EQ(outs[t][i], expected_sum(t, i, size()));
  }
}

TEST(EngineMp, AverageAndScalesInPlace) {
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(rank() + 1);
  // out = 0.5 * (sum over ranks of 2 * x) / size = mean of x.
  ASSERT_TRUE(allreduce("avg.scaled", view(x), view(x), ReduceOp::kAverage, 2.0, 0.5).ok());
  const float mean = (size() + 1) / 2.0f;
  for (float v : x) ASSERT_NEAR(v, mean, 1e-5f);
}

TEST(EngineMp, MismatchesFailOnEveryRankAndTheEngineGoesOn) {
  if (size() < 2) GTEST_SKIP() << "needs two ranks to disagree";
  const int r = rank();
  std::vector<float> a(r == 1 ? 6 : 5, 1.f), b(a.size());
  Status s = allreduce("mm.shape", view(a, {1, static_cast<int64_t>(a.size())}),
                       view(b, {1, static_cast<int64_t>(b.size())}), ReduceOp::kSum);
  EXPECT_EQ(s.code(), StatusCode::kMismatch) << s.to_string();
  EXPECT_NE(
      s.message().find("tensor 'mm.shape': allreduce shape [1,5] on rank 0 but [1,6] on rank 1"),
      std::string::npos)
      << s.message();

  std::vector<float> c(4, 1.f);
  s = allreduce("mm.op", view(c), view(c), r == 1 ? ReduceOp::kMax : ReduceOp::kSum);
  EXPECT_EQ(s.code(), StatusCode::kMismatch);
  EXPECT_NE(s.message().find("op sum on rank 0 but max on rank 1"), std::string::npos)
      << s.message();

  std::vector<double> d(4, 1.0);
  TensorView dv = r == 1 ? TensorView::make(d.data(), DataType::kFloat64, {4}).value() : view(c);
  s = allreduce("mm.dtype", dv, dv, ReduceOp::kSum);
  EXPECT_EQ(s.code(), StatusCode::kMismatch);
  EXPECT_NE(s.message().find("dtype float32 on rank 0 but float64 on rank 1"), std::string::npos)
      << s.message();

  s = broadcast("mm.root", view(c), r == 1 ? 1 : 0);
  EXPECT_EQ(s.code(), StatusCode::kMismatch);
  EXPECT_NE(s.message().find("broadcast root 0 on rank 0 but 1 on rank 1"), std::string::npos)
      << s.message();

  s = allreduce("mm.scale", view(c), view(c), ReduceOp::kSum, r == 1 ? 2.0 : 1.0);
  EXPECT_EQ(s.code(), StatusCode::kMismatch);
  EXPECT_NE(s.message().find("prescale 1 on rank 0 but 2 on rank 1"), std::string::npos)
      << s.message();

  Handle h =
      r == 1 ? allgather_async("mm.kind", view(c)) : allreduce_async("mm.kind", view(c), view(c));
  s = h.wait();
  EXPECT_EQ(s.code(), StatusCode::kMismatch);
  EXPECT_NE(s.message().find("collective allreduce on rank 0 but allgather on rank 1"),
            std::string::npos)
      << s.message();

  // The engine still serves, and a cached name changed on one rank is caught too.
  std::vector<float> e(8, 1.f);
  ASSERT_TRUE(allreduce("mm.after", view(e), view(e), ReduceOp::kSum).ok());
  for (float v : e) ASSERT_EQ(v, static_cast<float>(size()));
  std::vector<float> f(r == 1 ? 9 : 8, 1.f);
  s = allreduce("mm.after", view(f), view(f), ReduceOp::kSum);
  EXPECT_EQ(s.code(), StatusCode::kMismatch) << s.to_string();
  ASSERT_TRUE(allreduce("mm.after", view(e), view(e), ReduceOp::kSum).ok());
}

TEST(EngineMp, DuplicateNameInFlightFailsAtEnqueue) {
  std::vector<float> a(16, 1.f), b(16, 1.f);
  // Rank 0 enqueues 'dup' twice before the others enqueue it at all (they wait for the
  // barrier, which rank 0 joins only after its second call), so the first is in flight.
  // At one rank nothing waits for other ranks: the first may already be complete.
  if (size() == 1) GTEST_SKIP() << "needs a second rank to keep the first 'dup' in flight";
  Handle first;
  if (rank() == 0) {
    first = allreduce_async("dup", view(a), view(a), ReduceOp::kSum);
    Status s = allreduce_async("dup", view(b), view(b), ReduceOp::kSum).wait();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    EXPECT_NE(s.message().find("tensor 'dup': allreduce enqueued while a collective of that name "
                               "is still in flight"),
              std::string::npos)
        << s.message();
  }
  ASSERT_TRUE(barrier().ok());
  if (rank() != 0) first = allreduce_async("dup", view(a), view(a), ReduceOp::kSum);
  ASSERT_TRUE(first.wait().ok()) << first.wait().to_string();
  for (float v : a) ASSERT_EQ(v, static_cast<float>(size()));
  // The name is free again once its handle completed.
  ASSERT_TRUE(allreduce("dup", view(b), view(b), ReduceOp::kSum).ok());
}

// Every collective's handle refused for a name in flight is failed when the call returns:
// poll() at once, wait() the error (the Python adapters raise ValueError at the call from it).
TEST(EngineMp, DuplicateNameOfEveryCollectiveIsFailedOnReturn) {
  if (size() == 1) GTEST_SKIP() << "needs a second rank to keep the first call in flight";
  const int n = size();
  std::vector<float> a(n * 2, 1.f), b(n * 2, 1.f);
  using Start = Handle (*)(std::vector<float>&);
  const std::vector<std::pair<std::string, Start>> calls = {
      {"dup.allreduce",
       [](std::vector<float>& v) {
         return allreduce_async("dup.allreduce", view(v), view(v), ReduceOp::kSum);
       }},
      {"dup.grouped",
       [](std::vector<float>& v) {
         return grouped_allreduce_async({"dup.grouped"}, {view(v)}, {view(v)}, ReduceOp::kSum);
       }},
      {"dup.allgather",
       [](std::vector<float>& v) { return allgather_async("dup.allgather", view(v)); }},
      {"dup.broadcast",
       [](std::vector<float>& v) { return broadcast_async("dup.broadcast", view(v), 0); }},
      {"dup.alltoall",
       [](std::vector<float>& v) { return alltoall_async("dup.alltoall", view(v)); }},
      {"dup.reducescatter",
       [](std::vector<float>& v) { return reducescatter_async("dup.reducescatter", view(v)); }},
  };
  for (const auto& [name, start] : calls) {
    std::vector<float> first_in = a;
    Handle first;
    if (rank() == 0) {
      first = start(first_in);
      std::vector<float> second_in = b;
      Handle second = start(second_in);
      EXPECT_TRUE(second.poll()) << name << ": not failed when the call returned";
      Status s = second.wait(std::chrono::milliseconds(0));
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
      EXPECT_NE(s.message().find("tensor '" + name + "'"), std::string::npos) << s.message();
      EXPECT_NE(s.message().find("still in flight"), std::string::npos) << s.message();
    }
    ASSERT_TRUE(barrier().ok());
    if (rank() != 0) first = start(first_in);
    ASSERT_TRUE(first.wait().ok()) << name << ": " << first.wait().to_string();
  }
}

TEST(EngineMp, OtherCollectives) {
  const int r = rank(), n = size();
  // allgather with a different first dimension per rank (rank r has r+1 rows of 3).
  std::vector<float> rows((r + 1) * 3);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>(r * 100 + i);
  Handle g = allgather_async("ag", view(rows, {r + 1, 3}));
  ASSERT_TRUE(g.wait().ok()) << g.wait().to_string();
  ASSERT_EQ(g.output_shape(), (std::vector<int64_t>{n * (n + 1) / 2, 3}));
  const float* got = reinterpret_cast<const float*>(g.output().data());
  size_t k = 0;
  for (int p = 0; p < n; ++p)
    for (int i = 0; i < (p + 1) * 3; ++i) ASSERT_EQ(got[k++], static_cast<float>(p * 100 + i));

  // broadcast from the last rank.
  std::vector<float> b(10, static_cast<float>(r));
  ASSERT_TRUE(broadcast("bc", view(b), n - 1).ok());
  for (float v : b) ASSERT_EQ(v, static_cast<float>(n - 1));

  // alltoall: rank r sends p+1 rows of 2 to rank p, valued r*10+p.
  std::vector<int64_t> splits(n);
  std::vector<float> a2a;
  for (int p = 0; p < n; ++p) {
    splits[p] = p + 1;
    for (int i = 0; i < (p + 1) * 2; ++i) a2a.push_back(static_cast<float>(r * 10 + p));
  }
  Handle a = alltoall_async("a2a", view(a2a, {static_cast<int64_t>(a2a.size() / 2), 2}), splits);
  ASSERT_TRUE(a.wait().ok()) << a.wait().to_string();
  ASSERT_EQ(a.received_splits(), std::vector<int64_t>(n, r + 1));
  const float* in = reinterpret_cast<const float*>(a.output().data());
  for (int p = 0, idx = 0; p < n; ++p)
    for (int i = 0; i < (r + 1) * 2; ++i) ASSERT_EQ(in[idx++], static_cast<float>(p * 10 + r));

  // reducescatter of 2n+1 rows of 4: the first rank gets one more row.
  std::vector<float> rs((2 * n + 1) * 4, static_cast<float>(r + 1));
  Handle s = reducescatter_async("rs", view(rs, {2 * n + 1, 4}), ReduceOp::kSum);
  ASSERT_TRUE(s.wait().ok()) << s.wait().to_string();
  ASSERT_EQ(s.output_shape()[0], r == 0 ? 3 : 2);
  const float* red = reinterpret_cast<const float*>(s.output().data());
  for (size_t i = 0; i < s.output().size() / 4; ++i)
    ASSERT_EQ(red[i], static_cast<float>(n * (n + 1) / 2));

  ASSERT_TRUE(barrier().ok());
}

// Reducescatter's scale factors: this rank's block of postscale * op(prescale * in), the
// average divided before the postscale; factors that differ across ranks are a mismatch.
TEST(EngineMp, ReducescatterScaleFactors) {
  const int r = rank(), n = size();
  std::vector<float> rs(n * 2 * 3, static_cast<float>(r + 1));  // 2 rows of 3 per rank
  const float sum = static_cast<float>(n * (n + 1) / 2);
  struct Case {
    ReduceOp op;
    double prescale, postscale;
    float expected;
  };
  const Case cases[] = {{ReduceOp::kSum, 0.5, 4.0, 2.0f * sum},
                        {ReduceOp::kAverage, 2.0, 3.0, 6.0f * sum / n},
                        {ReduceOp::kMax, -1.0, 2.0, -2.0f}};  // max of -(r + 1): -1
  for (const Case& c : cases) {
    StatusOr<CollectiveResult> got =
        reducescatter("rs.scaled", view(rs, {n * 2, 3}), c.op, c.prescale, c.postscale);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    ASSERT_EQ(got->shape, (std::vector<int64_t>{2, 3}));
    const float* v = reinterpret_cast<const float*>(got->data.data());
    for (int i = 0; i < 6; ++i) ASSERT_FLOAT_EQ(v[i], c.expected) << reduce_op_name(c.op);
  }
  Handle bad =
      reducescatter_async("rs.bad", view(rs, {n * 2, 3}), ReduceOp::kSum, std::nan(""), 1.0);
  ASSERT_TRUE(bad.poll());
  EXPECT_EQ(bad.wait().code(), StatusCode::kInvalidArgument);
  if (n == 1) return;
  Status s =
      reducescatter("rs.mismatch", view(rs, {n * 2, 3}), ReduceOp::kSum, 1.0 + r, 1.0).status();
  EXPECT_EQ(s.code(), StatusCode::kMismatch) << s.to_string();
  EXPECT_NE(s.message().find("reducescatter prescale"), std::string::npos) << s.message();
}

// allgather_async_batch / reducescatter_async_batch: a handle each, the right outputs; a
// batch with a member whose name is in flight is refused whole (every handle failed at
// return, no member left in flight).
TEST(EngineMp, BatchedAllgatherAndReducescatter) {
  const int r = rank(), n = size();
  std::vector<float> a(2 * n, static_cast<float>(r)), b(4 * n, static_cast<float>(r + 1));
  std::vector<Handle> g = allgather_async_batch({"batch.ag.a", "batch.ag.b"},
                                                {view(a, {n, 2}), view(b, {n, 4})}, {{}, {}});
  ASSERT_EQ(g.size(), 2u);
  for (Handle& h : g) ASSERT_TRUE(h.wait().ok()) << h.wait().to_string();
  EXPECT_EQ(g[0].output_shape(), (std::vector<int64_t>{n * n, 2}));
  EXPECT_EQ(g[1].output_shape(), (std::vector<int64_t>{n * n, 4}));
  std::vector<Handle> rs =
      reducescatter_async_batch({"batch.rs.a", "batch.rs.b"}, {view(a, {n, 2}), view(b, {n, 4})},
                                ReduceOp::kSum, 2.0, 0.5, {{}, {}});
  ASSERT_EQ(rs.size(), 2u);
  for (Handle& h : rs) ASSERT_TRUE(h.wait().ok()) << h.wait().to_string();
  const float* rb = reinterpret_cast<const float*>(rs[1].output().data());
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(rb[i], static_cast<float>(n * (n + 1) / 2));
  if (n == 1) return;
  Handle held;
  if (r == 0) {
    held = allgather_async("batch.held", view(a, {n, 2}));
    std::vector<Handle> refused = allgather_async_batch(
        {"batch.free", "batch.held"}, {view(a, {n, 2}), view(b, {n, 4})}, {{}, {}});
    for (Handle& h : refused) {
      ASSERT_TRUE(h.poll());
      EXPECT_EQ(h.wait().code(), StatusCode::kInvalidArgument) << h.wait().to_string();
    }
  }
  ASSERT_TRUE(barrier().ok());
  if (r != 0) held = allgather_async("batch.held", view(a, {n, 2}));
  ASSERT_TRUE(held.wait().ok());
  // "batch.free" was not left in flight by the refused batch.
  ASSERT_TRUE(allgather("batch.free", view(a, {n, 2})).ok());
}

TEST(EngineMp, BlockingForms) {
  const int r = rank(), n = size();
  std::vector<float> rows((r + 1) * 2, static_cast<float>(r));
  StatusOr<CollectiveResult> g = allgather("blocking.ag", view(rows, {r + 1, 2}));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  ASSERT_EQ(g->shape, (std::vector<int64_t>{n * (n + 1) / 2, 2}));
  const float* got = reinterpret_cast<const float*>(g->data.data());
  for (int p = 0, k = 0; p < n; ++p)
    for (int i = 0; i < (p + 1) * 2; ++i) ASSERT_EQ(got[k++], static_cast<float>(p));

  std::vector<float> a2a(n * 3, static_cast<float>(r));  // an even split: 3 rows to each rank
  StatusOr<CollectiveResult> a = alltoall("blocking.a2a", view(a2a, {n * 3, 1}));
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  ASSERT_EQ(a->received_splits, std::vector<int64_t>(n, 3));
  const float* in = reinterpret_cast<const float*>(a->data.data());
  for (int p = 0; p < n; ++p)
    for (int i = 0; i < 3; ++i) ASSERT_EQ(in[p * 3 + i], static_cast<float>(p));

  std::vector<float> rs(n * 2, 1.f);
  StatusOr<CollectiveResult> s = reducescatter("blocking.rs", view(rs, {n * 2, 1}), ReduceOp::kSum);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_EQ(s->shape, (std::vector<int64_t>{2, 1}));
  for (size_t i = 0; i < 2; ++i)
    ASSERT_EQ(reinterpret_cast<const float*>(s->data.data())[i], static_cast<float>(n));

  std::vector<float> x(5, 1.f), y(7, 2.f);
  ASSERT_TRUE(grouped_allreduce({"blocking.g0", "blocking.g1"}, {view(x), view(y)},
                                {view(x), view(y)}, ReduceOp::kSum)
                  .ok());
  for (float v : x) ASSERT_EQ(v, static_cast<float>(n));
  for (float v : y) ASSERT_EQ(v, static_cast<float>(2 * n));

  // A failed blocking call reports the error (here at enqueue: splits that do not add up).
  StatusOr<CollectiveResult> bad =
      alltoall("blocking.bad", view(a2a, {n * 3, 1}), std::vector<int64_t>(n, 4));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << bad.status().to_string();
}

TEST(EngineMp, UnnamedCallsStayInStepAfterALocalFailure) {
  std::vector<float> a(4, 1.f), b(5);
  if (rank() == 0) {
    // Fails its checks on this rank only: it must not use up a generated name.
    Status bad = allreduce("", view(a), view(b));
    EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(bad.message().find("<unnamed allreduce>"), std::string::npos) << bad.message();
  }
  std::vector<float> x(3, 1.f);
  Handle h = allreduce_async("", view(x), view(x), ReduceOp::kSum);
  EXPECT_EQ(h.name().find("allreduce.noname."), 0u) << h.name();
  Status s = h.wait();
  ASSERT_TRUE(s.ok()) << s.to_string();
  for (float v : x) ASSERT_EQ(v, static_cast<float>(size()));
}

TEST(EngineMp, PollAndWaitWithATimeoutBeforeThePeersArrive) {
  std::vector<float> x(3, 1.f), go(1, 0.f);
  Handle h;
  if (rank() == 0) {
    h = allreduce_async("poll.late", view(x), view(x), ReduceOp::kSum);
    if (size() > 1) {
      // The others enqueue it only after the broadcast below: it cannot be done yet.
      EXPECT_FALSE(h.poll());
      Status early = h.wait(std::chrono::milliseconds(50));
      EXPECT_EQ(early.code(), StatusCode::kTimeout) << early.to_string();
      EXPECT_NE(early.message().find("poll.late"), std::string::npos) << early.message();
    }
    go[0] = 1.f;
  }
  ASSERT_TRUE(broadcast("poll.go", view(go), 0).ok());
  ASSERT_EQ(go[0], 1.f);
  if (rank() != 0) h = allreduce_async("poll.late", view(x), view(x), ReduceOp::kSum);
  Status s = h.wait();
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_TRUE(h.poll());
  for (float v : x) ASSERT_EQ(v, static_cast<float>(size()));
}

TEST(EngineMp, JoinWithEveryRankTakingATurnLast) {
  const int r = rank(), n = size();
  for (int last = 0; last < n; ++last) {
    const int steps = r == last ? 3 : 1;
    for (int s = 0; s < steps; ++s) {
      std::vector<float> x(33, static_cast<float>(r + 1));
      const std::string name = "join." + std::to_string(last) + "." + std::to_string(s);
      ASSERT_TRUE(allreduce(name, view(x), view(x), ReduceOp::kSum).ok());
      // Step 0: every rank; later steps: only `last`, the others contribute zeros.
      const float want = s == 0 ? static_cast<float>(n * (n + 1) / 2) : static_cast<float>(r + 1);
      for (float v : x) ASSERT_EQ(v, want) << name;
    }
    if (r == last && n > 1) {
      // Average still divides by size; min cannot take the joined ranks' zeros.
      std::vector<float> y(5, static_cast<float>(n));
      ASSERT_TRUE(allreduce("join.avg", view(y), view(y), ReduceOp::kAverage).ok());
      for (float v : y) ASSERT_FLOAT_EQ(v, 1.0f);
      Status bad = allreduce("join.min", view(y), view(y), ReduceOp::kMin);
      EXPECT_EQ(bad.code(), StatusCode::kMismatch);
      EXPECT_NE(bad.message().find("have joined"), std::string::npos) << bad.message();
    }
    StatusOr<int> j = join();
    ASSERT_TRUE(j.ok()) << j.status().to_string();
    EXPECT_EQ(*j, last);
  }
}

// Steps of one tensor repeat their round's list (EngineStats::repeated_steps); once a rank has
// joined, its rounds still agree that list while `last` runs it, and the joined rank must
// contribute zeros instead of reading the tensors of the steps it ran before joining.
TEST(EngineMp, AJoinedRankRepeatsAStepWithoutItsOldTensors) {
  const int r = rank(), n = size();
  const int last = n - 1;
  const EngineStats before = engine_stats();
  const int steps = r == last ? 8 : 4;
  for (int s = 0; s < steps; ++s) {
    std::vector<float> x(17, static_cast<float>(r + 1 + s));
    ASSERT_TRUE(allreduce("join.repeat", view(x), view(x), ReduceOp::kSum).ok());
    // Steps 0-3: every rank; later steps: only `last`, the others contribute zeros.
    const float want =
        s < 4 ? static_cast<float>(n * (n + 1) / 2 + n * s) : static_cast<float>(r + 1 + s);
    for (float v : x) ASSERT_EQ(v, want) << "step " << s;
  }
  StatusOr<int> j = join();
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  EXPECT_EQ(*j, last);
  // Step 1's list (a cache hit) was repeated from step 2 on.
  EXPECT_GE(engine_stats().repeated_steps - before.repeated_steps, 2);
}

TEST(EngineMp, ShutdownFailsPendingThenInitAgain) {
  const int r = rank();
  std::vector<float> x(4, 1.f);
  // Only rank 0 enqueues it: it can never be agreed, and shutdown must fail it, not hang.
  Handle orphan;
  const bool orphaned = r == 0 && size() > 1;  // one rank alone agrees with itself
  if (orphaned) orphan = allreduce_async("orphan", view(x), view(x));
  ASSERT_TRUE(shutdown().ok());
  ASSERT_TRUE(shutdown().ok());  // twice is fine
  if (orphaned) {
    // This rank's own shutdown fails it (kFailedPrecondition), or a peer's that came first
    // (kRemote: "rank R shut hora down before this collective completed").
    Status s = orphan.wait();
    EXPECT_TRUE(s.code() == StatusCode::kFailedPrecondition || s.code() == StatusCode::kRemote)
        << s.to_string();
    EXPECT_NE(s.message().find("orphan"), std::string::npos) << s.message();
  }
  Status after = allreduce_async("late", view(x), view(x)).wait();
  EXPECT_EQ(after.code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(init().ok());
  ASSERT_TRUE(allreduce("again", view(x), view(x), ReduceOp::kSum).ok());
  for (float v : x) ASSERT_EQ(v, static_cast<float>(size()));
}

// int16 and uint16 with sum (wrapping) and average (integer rounding); bool with min (and),
// max (or) and product (and), alone and fused in a group, and gathered; bool sum, average and
// scale factors refused at enqueue with a message naming the tensor, after which the engine
// goes on.
TEST(EngineMp, Int16Uint16AndBoolThroughTheEngine) {
  const int r = rank(), n = size();
  const size_t count = 37;
  std::vector<int16_t> i16(count);
  for (size_t i = 0; i < count; ++i) i16[i] = static_cast<int16_t>(30000 + i);
  auto v16 = TensorView::flat(i16.data(), DataType::kInt16, count).value();
  ASSERT_TRUE(allreduce("i16.sum", v16, v16, ReduceOp::kSum).ok());
  for (size_t i = 0; i < count; ++i)
    ASSERT_EQ(i16[i], static_cast<int16_t>(static_cast<uint16_t>(n * (30000 + i)))) << i;
  std::vector<uint16_t> u16(count, static_cast<uint16_t>(2 * r + 1));  // sum n^2, average n
  auto vu16 = TensorView::flat(u16.data(), DataType::kUint16, count).value();
  ASSERT_TRUE(allreduce("u16.avg", vu16, vu16, ReduceOp::kAverage).ok());
  for (uint16_t v : u16) ASSERT_EQ(v, n);

  // Element i is false on rank r when (i + r) % 3 == 0, else a byte 1, 2 or 0x80.
  auto flag = [](int rank_of, size_t i) -> uint8_t {
    const uint8_t kTrue[3] = {1, 2, 0x80};
    return (i + rank_of) % 3 == 0 ? 0 : kTrue[i % 3];
  };
  auto flags = [&] {
    std::vector<uint8_t> f(count);
    for (size_t i = 0; i < count; ++i) f[i] = flag(r, i);
    return f;
  };
  auto truth = [&](size_t i, bool want_all) {
    bool all = true, any = false;
    for (int p = 0; p < n; ++p) {
      all = all && flag(p, i) != 0;
      any = any || flag(p, i) != 0;
    }
    return static_cast<uint8_t>(want_all ? all : any);
  };
  std::vector<uint8_t> band = flags(), bor = flags(), bprod = flags(), out(count, 0xEE);
  auto bview = [&](std::vector<uint8_t>& f) {
    return TensorView::flat(f.data(), DataType::kBool, static_cast<int64_t>(f.size())).value();
  };
  ASSERT_TRUE(allreduce("b.min", bview(band), bview(out), ReduceOp::kMin).ok());
  ASSERT_TRUE(grouped_allreduce({"g.max.0", "g.max.1"}, {bview(bor), bview(bprod)},
                                {bview(bor), bview(bprod)}, ReduceOp::kMax)
                  .ok());
  for (size_t i = 0; i < count; ++i) {
    // One rank combines nothing: its bytes come back as they are.
    ASSERT_EQ(out[i], n == 1 ? flag(0, i) : truth(i, true)) << "min " << i;
    ASSERT_EQ(bor[i], n == 1 ? flag(0, i) : truth(i, false)) << "max " << i;
    ASSERT_EQ(bprod[i], bor[i]) << "grouped max " << i;
  }
  bprod = flags();
  ASSERT_TRUE(allreduce("b.prod", bview(bprod), bview(bprod), ReduceOp::kProduct).ok());
  for (size_t i = 0; i < count; ++i)
    ASSERT_EQ(bprod[i], n == 1 ? flag(0, i) : truth(i, true)) << "product " << i;

  std::vector<uint8_t> mine(r + 1, static_cast<uint8_t>(r % 2));
  StatusOr<CollectiveResult> gathered =
      allgather("b.gather", TensorView::make(mine.data(), DataType::kBool, {r + 1}).value());
  ASSERT_TRUE(gathered.ok()) << gathered.status().to_string();
  ASSERT_EQ(gathered->shape, (std::vector<int64_t>{n * (n + 1) / 2}));
  for (int p = 0, k = 0; p < n; ++p)
    for (int i = 0; i <= p; ++i) ASSERT_EQ(gathered->data[k++], p % 2) << p;

  const std::string alternatives =
      " is not defined for bool; use min (logical and) or max "
      "(logical or)";
  std::vector<uint8_t> b = flags();
  Status s = allreduce("b.sum", bview(b), bview(b), ReduceOp::kSum);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().rfind("tensor 'b.sum': allreduce op sum" + alternatives, 0), 0u)
      << s.message();
  s = allreduce("b.avg", bview(b), bview(b), ReduceOp::kAverage);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("allreduce op average" + alternatives), std::string::npos);
  s = grouped_allreduce({"g.sum.0", "g.sum.1"}, {v16, bview(b)}, {v16, bview(b)}, ReduceOp::kSum);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tensor 'g.sum.1': allreduce op sum" + alternatives),
            std::string::npos)
      << s.message();
  std::vector<uint8_t> rows(2 * n, 1);
  s = reducescatter("b.rs", TensorView::make(rows.data(), DataType::kBool, {2 * n}).value(),
                    ReduceOp::kAverage)
          .status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tensor 'b.rs': reducescatter op average" + alternatives),
            std::string::npos)
      << s.message();
  s = allreduce("b.scaled", bview(b), bview(b), ReduceOp::kMax, 0.5, 1.0);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("not defined for bool (only 1.0)"), std::string::npos) << s.message();
  // Nothing was enqueued: the engine goes on.
  ASSERT_TRUE(allreduce("b.after", bview(b), bview(b), ReduceOp::kMin).ok());
}

TEST(EngineMp, BadInputFailsAtEnqueue) {
  std::vector<float> a(4), b(5);
  Status s = allreduce("bad.count", view(a), view(b));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("output must match the input"), std::string::npos) << s.message();
  // Each condition the call's first test covers, failing alone: the call is refused, naming
  // the tensor and the value.
  std::vector<double> d(4);
  s = allreduce("bad.dtype", view(a), TensorView::flat(d.data(), DataType::kFloat64, 4).value());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tensor 'bad.dtype': allreduce output must match"), std::string::npos)
      << s.message();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  s = allreduce("bad.pre", view(a), view(a), ReduceOp::kSum, nan, 1.0);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tensor 'bad.pre': prescale nan"), std::string::npos) << s.message();
  s = allreduce("bad.post", view(a), view(a), ReduceOp::kSum, 1.0, -inf);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("postscale -inf"), std::string::npos) << s.message();
  AllreduceOptions bad_op;
  bad_op.op = static_cast<ReduceOp>(99);
  s = allreduce_async("bad.op", view(a), view(a), bad_op).wait();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("99"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("bad.op"), std::string::npos) << s.message();
  AllreduceOptions bad_compression;
  bad_compression.compression = static_cast<Compression>(42);
  s = allreduce_async("bad.compression", view(a), view(a), bad_compression).wait();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("42"), std::string::npos) << s.message();
  s = broadcast("bad.root", view(a), size());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  s = alltoall_async("bad.splits", view(a, {4}), std::vector<int64_t>(size(), 5)).wait();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hora
