// The engine's adapter-facing API under a real launcher: compression as an allreduce option
// (float16/bfloat16 on the wire, exact where the half type holds the values, within the
// half type's rounding otherwise, bitwise identical on every rank), output allocators for
// allgather/alltoall/reducescatter (also one that fails on one rank), completion callbacks,
// and barrier/join with timeouts and async forms. Every rank runs every test (mp_main.cc).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collectives/rendezvous/store.h"
#include "core/context.h"
#include "core/context_access.h"
#include "hora/hora.h"
#include "kernels/kernels.h"

namespace hora {
namespace {

TensorView view(std::vector<float>& v, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  return TensorView::make(v.data(), DataType::kFloat32, shape).value();
}

// True when `bytes` bytes at `data` are the same on every rank (an allgather of them).
bool same_on_every_rank(const std::string& name, const void* data, size_t bytes) {
  std::vector<uint8_t> mine(static_cast<const uint8_t*>(data),
                            static_cast<const uint8_t*>(data) + bytes);
  TensorView v =
      TensorView::make(mine.data(), DataType::kUint8, {1, static_cast<int64_t>(bytes)}).value();
  StatusOr<CollectiveResult> all = allgather(name, v);
  EXPECT_TRUE(all.ok()) << all.status().to_string();
  if (!all.ok()) return false;
  for (int p = 0; p < size(); ++p)
    if (std::memcmp(all->data.data() + p * bytes, mine.data(), bytes) != 0) return false;
  return true;
}

// The job's rendezvous store: a side channel that orders steps across ranks without a
// collective (a rank inside a pending barrier or join cannot run one).
collectives::Store& store() { return detail::context()->store(); }
Deadline test_deadline() { return Deadline::after_seconds(60); }

// Quarter integers in [-6, 6.75]: exact in float16 and bfloat16, and so is their sum over
// up to 5 ranks (at most 8 significant bits).
float exact_input(int r, size_t i) {
  return static_cast<float>(static_cast<int>((r * 7 + i) % 13) - 6) + 0.25f * (i % 4);
}

const Compression kHalfTypes[] = {Compression::kFloat16, Compression::kBFloat16};

TEST(EngineApiCompression, ExactValuesReduceExactlyAloneAndFused) {
  const int n = size(), r = rank();
  const std::vector<size_t> counts = {1009, 1, 100, 5000};
  for (Compression c : kHalfTypes) {
    const std::string tag = std::string("cmp.") + compression_name(c) + ".";
    std::vector<std::vector<float>> x(counts.size()), out(counts.size());
    for (size_t t = 0; t < counts.size(); ++t) {
      x[t].resize(counts[t]);
      out[t].assign(counts[t], -1.f);
      for (size_t i = 0; i < counts[t]; ++i) x[t][i] = exact_input(r, i + t);
    }
    // Lone, out of place, sum with scales that cancel (2 before the sum, 1/2 after).
    Status s = allreduce_async(tag + "lone", view(x[0]), view(out[0]),
                               AllreduceOptions{ReduceOp::kSum, 2.0, 0.5, c})
                   .wait();
    ASSERT_TRUE(s.ok()) << s.to_string();
    for (size_t i = 0; i < counts[0]; ++i) {
      float want = 0;
      for (int p = 0; p < n; ++p) want += exact_input(p, i);
      ASSERT_EQ(out[0][i], want) << tag << "lone[" << i << "]";
    }
    // A fused group, in place, average: the 1/size is applied in float32 after the cast back.
    std::vector<std::string> names;
    std::vector<TensorView> views;
    for (size_t t = 1; t < counts.size(); ++t) {
      names.push_back(tag + "group." + std::to_string(t));
      views.push_back(view(x[t]));
    }
    s = grouped_allreduce_async(names, views, views,
                                AllreduceOptions{ReduceOp::kAverage, 1.0, 1.0, c})
            .wait();
    ASSERT_TRUE(s.ok()) << s.to_string();
    for (size_t t = 1; t < counts.size(); ++t) {
      for (size_t i = 0; i < counts[t]; ++i) {
        float sum = 0;
        for (int p = 0; p < n; ++p) sum += exact_input(p, i + t);
        ASSERT_EQ(x[t][i], sum * static_cast<float>(1.0 / n)) << tag << t << "[" << i << "]";
      }
      EXPECT_TRUE(same_on_every_rank(tag + "same." + std::to_string(t), x[t].data(),
                                     x[t].size() * sizeof(float)));
    }
  }
}

TEST(EngineApiCompression, RoundsToTheHalfTypeWithinItsPrecisionAndIdenticalEverywhere) {
  const int n = size(), r = rank();
  const size_t count = 4099;
  for (Compression c : kHalfTypes) {
    // Spacing of the half type at 1: float16 has 10 stored bits, bfloat16 7.
    const double unit = c == Compression::kFloat16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    auto input = [](int p, size_t i) {
      return static_cast<float>(std::sin(0.37 * static_cast<double>(i) + p) * (1 + i % 17));
    };
    std::vector<float> x(count), out(count);
    for (size_t i = 0; i < count; ++i) x[i] = input(r, i);
    const std::string name = std::string("cmp.round.") + compression_name(c);
    Status s =
        allreduce_async(name, view(x), view(out), AllreduceOptions{ReduceOp::kSum, 1.0, 1.0, c})
            .wait();
    ASSERT_TRUE(s.ok()) << s.to_string();
    bool rounded_somewhere = false;
    for (size_t i = 0; i < count; ++i) {
      double exact = 0, magnitude = 0;
      for (int p = 0; p < n; ++p) {
        exact += input(p, i);
        magnitude += std::fabs(input(p, i));
      }
      // Each input rounds once and each of the n-1 partial sums once, each by at most half a
      // unit relative to a value no larger than the sum of magnitudes.
      ASSERT_LE(std::fabs(out[i] - exact), 2.0 * n * unit * magnitude + 1e-6)
          << name << "[" << i << "]";
      if (out[i] != static_cast<float>(exact)) rounded_somewhere = true;
    }
    EXPECT_TRUE(rounded_somewhere) << name << ": nothing was rounded, so nothing was compressed";
    EXPECT_TRUE(same_on_every_rank(name + ".same", out.data(), count * sizeof(float)));
  }
}

TEST(EngineApiCompression, OnlyFloat32AndTheSameOnEveryRank) {
  std::vector<int32_t> ints(4, 1);
  TensorView iv = TensorView::flat(ints.data(), DataType::kInt32, 4).value();
  Status s = allreduce_async("cmp.int", iv, iv,
                             AllreduceOptions{ReduceOp::kSum, 1.0, 1.0, Compression::kFloat16})
                 .wait();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tensor 'cmp.int': compression fp16 applies to float32 tensors "
                             "only, got int32"),
            std::string::npos)
      << s.message();
  std::vector<float> x(4, 1.f);
  s = allreduce_async("cmp.badcode", view(x), view(x),
                      AllreduceOptions{ReduceOp::kSum, 1.0, 1.0, static_cast<Compression>(9)})
          .wait();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  if (size() < 2) return;
  const Compression mine = rank() == 1 ? Compression::kFloat16 : Compression::kNone;
  s = allreduce_async("cmp.mismatch", view(x), view(x),
                      AllreduceOptions{ReduceOp::kSum, 1.0, 1.0, mine})
          .wait();
  EXPECT_EQ(s.code(), StatusCode::kMismatch);
  EXPECT_NE(s.message().find("compression none on rank 0 but fp16 on rank 1"), std::string::npos)
      << s.message();
}

// An allocator over a caller-owned vector that records its calls.
struct Recording {
  std::vector<float> memory;
  int calls = 0;
  DataType dtype = DataType::kUint8;
  std::vector<int64_t> shape;
  OutputAllocator allocator() {
    return [this](DataType d, const std::vector<int64_t>& s) -> StatusOr<TensorView> {
      ++calls;
      dtype = d;
      shape = s;
      int64_t count = 1;
      for (int64_t v : s) count *= v;
      memory.assign(static_cast<size_t>(count), -1.f);
      return TensorView::make(memory.data(), d, s);
    };
  }
};

TEST(EngineApiAllocator, ResultsLandInTheCallersMemory) {
  const int r = rank(), n = size();
  // allgather: rank p has p+1 rows of 3 valued p*100+i.
  std::vector<float> rows((r + 1) * 3);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>(r * 100 + i);
  Recording ag;
  Handle g = allgather_async("alloc.ag", view(rows, {r + 1, 3}), ag.allocator());
  ASSERT_TRUE(g.wait().ok()) << g.wait().to_string();
  EXPECT_EQ(ag.calls, 1);
  EXPECT_EQ(ag.dtype, DataType::kFloat32);
  EXPECT_EQ(ag.shape, (std::vector<int64_t>{n * (n + 1) / 2, 3}));
  EXPECT_EQ(g.output_shape(), ag.shape);
  EXPECT_TRUE(g.output().empty()) << "the engine kept its own copy";
  for (int p = 0, k = 0; p < n; ++p)
    for (int i = 0; i < (p + 1) * 3; ++i)
      ASSERT_EQ(ag.memory[k++], static_cast<float>(p * 100 + i));

  // alltoall: p+1 rows of 2 valued r*10+p go to rank p.
  std::vector<int64_t> splits(n);
  std::vector<float> a2a;
  for (int p = 0; p < n; ++p) {
    splits[p] = p + 1;
    for (int i = 0; i < (p + 1) * 2; ++i) a2a.push_back(static_cast<float>(r * 10 + p));
  }
  Recording at;
  Handle a = alltoall_async("alloc.a2a", view(a2a, {static_cast<int64_t>(a2a.size() / 2), 2}),
                            splits, at.allocator());
  ASSERT_TRUE(a.wait().ok()) << a.wait().to_string();
  EXPECT_EQ(at.shape, (std::vector<int64_t>{static_cast<int64_t>(n) * (r + 1), 2}));
  EXPECT_EQ(a.received_splits(), std::vector<int64_t>(n, r + 1));
  EXPECT_TRUE(a.output().empty());
  for (int p = 0, k = 0; p < n; ++p)
    for (int i = 0; i < (r + 1) * 2; ++i) ASSERT_EQ(at.memory[k++], static_cast<float>(p * 10 + r));

  // reducescatter of 2n+1 rows of 4: rank 0 gets 3 rows, the others 2.
  std::vector<float> rs((2 * n + 1) * 4, static_cast<float>(r + 1));
  Recording rc;
  Handle s =
      reducescatter_async("alloc.rs", view(rs, {2 * n + 1, 4}), ReduceOp::kSum, rc.allocator());
  ASSERT_TRUE(s.wait().ok()) << s.wait().to_string();
  EXPECT_EQ(rc.shape, (std::vector<int64_t>{r == 0 ? 3 : 2, 4}));
  EXPECT_TRUE(s.output().empty());
  for (float v : rc.memory) ASSERT_EQ(v, static_cast<float>(n * (n + 1) / 2));
}

TEST(EngineApiAllocator, AFailingAllocatorFailsOnlyItsRankAndHoldsNobodyUp) {
  const int r = rank(), n = size();
  const int bad = n - 1;
  std::vector<float> rows(2 * 3, static_cast<float>(r));
  Recording good;
  OutputAllocator failing = [](DataType, const std::vector<int64_t>&) -> StatusOr<TensorView> {
    return Status::io("no memory left for the test");
  };
  Handle g =
      allgather_async("alloc.fail.ag", view(rows, {2, 3}), r == bad ? failing : good.allocator());
  Status s = g.wait();
  if (r == bad) {
    EXPECT_EQ(s.code(), StatusCode::kIo);
    EXPECT_NE(s.message().find("tensor 'alloc.fail.ag': output allocator failed: no memory left"),
              std::string::npos)
        << s.message();
  } else {
    ASSERT_TRUE(s.ok()) << s.to_string();
    for (int p = 0; p < n; ++p)
      for (int i = 0; i < 6; ++i) ASSERT_EQ(good.memory[p * 6 + i], static_cast<float>(p));
  }

  // A view of the wrong shape is refused the same way.
  std::vector<float> elsewhere(1);
  OutputAllocator wrong = [&](DataType d, const std::vector<int64_t>&) -> StatusOr<TensorView> {
    return TensorView::make(elsewhere.data(), d, {1});
  };
  std::vector<float> rs(n * 2, 1.f);
  Recording ok;
  Handle h = reducescatter_async("alloc.fail.rs", view(rs, {n * 2, 1}), ReduceOp::kSum,
                                 r == bad ? wrong : ok.allocator());
  s = h.wait();
  if (r == bad) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("returned float32[1] but the result is float32[2,1]"),
              std::string::npos)
        << s.message();
  } else {
    ASSERT_TRUE(s.ok()) << s.to_string();
    for (float v : ok.memory) ASSERT_EQ(v, static_cast<float>(n));
  }
  // Every rank goes on.
  std::vector<float> x(3, 1.f);
  ASSERT_TRUE(allreduce("alloc.after", view(x), view(x), ReduceOp::kSum).ok());
  for (float v : x) ASSERT_EQ(v, static_cast<float>(n));
}

TEST(EngineApiCallbacks, EachRunsOnceBeforeWaitReturnsInCompletionOrder) {
  const int n = size();
  std::mutex mu;
  std::vector<int> order;  // guarded by mu
  std::vector<std::vector<float>> x(20, std::vector<float>(7, 1.f));
  for (int t = 0; t < 20; ++t) {
    // One at a time: each completes before the next is enqueued, so the callbacks must run
    // in this order.
    Handle h = allreduce_async("cb." + std::to_string(t), view(x[t]), view(x[t]), ReduceOp::kSum);
    std::atomic<int> calls{0};
    h.on_complete([&, t](const Status& s) {
      EXPECT_TRUE(s.ok()) << s.to_string();
      ++calls;
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(t);
    });
    ASSERT_TRUE(h.wait().ok());
    EXPECT_EQ(calls.load(), 1) << "wait() returned before the callback ran, tensor " << t;
    for (float v : x[t]) ASSERT_EQ(v, static_cast<float>(n));
    // Registered after completion: runs at once, on this thread.
    std::thread::id ran_on;
    h.on_complete([&](const Status&) { ran_on = std::this_thread::get_id(); });
    EXPECT_EQ(ran_on, std::this_thread::get_id());
  }
  std::vector<int> want(20);
  for (int t = 0; t < 20; ++t) want[t] = t;
  EXPECT_EQ(order, want);
}

// It runs on the thread that ran the completing round: the engine thread, or this thread when
// its wait helped (HORA_WAITERS_HELP); either way after registration and before wait returns.
TEST(EngineApiCallbacks, APendingHandlesCallbackRunsAtCompletionNotAtRegistration) {
  if (size() < 2) GTEST_SKIP() << "needs a peer that arrives late";
  std::vector<float> x(5, 1.f), go(1, 0.f);
  Handle h;
  std::atomic<int> calls{0};
  if (rank() == 0) {
    h = allreduce_async("cb.late", view(x), view(x), ReduceOp::kSum);
    h.on_complete([&](const Status& s) {
      EXPECT_TRUE(s.ok()) << s.to_string();
      ++calls;
    });
    EXPECT_EQ(calls.load(), 0);
    go[0] = 1.f;
  }
  ASSERT_TRUE(broadcast("cb.go", view(go), 0).ok());
  if (rank() != 0) h = allreduce_async("cb.late", view(x), view(x), ReduceOp::kSum);
  ASSERT_TRUE(h.wait().ok());
  if (rank() == 0) {
    EXPECT_EQ(calls.load(), 1);
  }
}

TEST(EngineApiBarrier, TimeoutKeepsItPendingAndTheNextCallFinishesIt) {
  const std::string key = "test/engine_api/barrier_timed_out";
  if (size() == 1) {
    ASSERT_TRUE(barrier(std::chrono::milliseconds(2000)).ok());
  } else if (rank() == 0) {
    // The others call barrier only after this rank gave up waiting.
    Status s = barrier(std::chrono::milliseconds(50));
    EXPECT_EQ(s.code(), StatusCode::kTimeout);
    EXPECT_NE(s.message().find("stays pending"), std::string::npos) << s.message();
    ASSERT_TRUE(store().set(key, {1}).ok());
    Status later = barrier();  // takes over the pending one
    ASSERT_TRUE(later.ok()) << later.to_string();
  } else {
    ASSERT_TRUE(store().get(key, test_deadline()).ok());
    ASSERT_TRUE(barrier(std::chrono::milliseconds(60000)).ok());
  }
  // The async form, with a callback; then the engine serves as before.
  Handle h = barrier_async();
  std::atomic<int> calls{0};
  h.on_complete([&](const Status& s) {
    EXPECT_TRUE(s.ok());
    ++calls;
  });
  ASSERT_TRUE(h.wait().ok());
  EXPECT_EQ(calls.load(), 1);
  std::vector<float> x(2, 1.f);
  ASSERT_TRUE(allreduce("barrier.after", view(x), view(x), ReduceOp::kSum).ok());
  for (float v : x) ASSERT_EQ(v, static_cast<float>(size()));
}

// The last rank to join, checked to be the same on every rank.
void expect_same_last_joined(const std::string& name, int last) {
  EXPECT_GE(last, 0);
  EXPECT_LT(last, size());
  std::vector<float> lo(1, static_cast<float>(last)), hi(1, static_cast<float>(last));
  ASSERT_TRUE(allreduce(name + ".min", view(lo), view(lo), ReduceOp::kMin).ok());
  ASSERT_TRUE(allreduce(name + ".max", view(hi), view(hi), ReduceOp::kMax).ok());
  EXPECT_EQ(lo[0], hi[0]) << name;
}

TEST(EngineApiJoin, TimeoutKeepsItPendingAndAsyncFormReportsTheLastRank) {
  const std::string key = "test/engine_api/join_timed_out";
  int last = -1;
  if (size() == 1) {
    StatusOr<int> j = join(std::chrono::milliseconds(2000));
    ASSERT_TRUE(j.ok()) << j.status().to_string();
    last = *j;
    EXPECT_EQ(last, 0);
  } else if (rank() == 0) {
    StatusOr<int> early = join(std::chrono::milliseconds(50));
    EXPECT_EQ(early.status().code(), StatusCode::kTimeout);
    EXPECT_NE(early.status().message().find("hora.join"), std::string::npos)
        << early.status().message();
    ASSERT_TRUE(store().set(key, {1}).ok());
    StatusOr<int> j = join();  // the pending join, not a second one
    ASSERT_TRUE(j.ok()) << j.status().to_string();
    last = *j;
    EXPECT_NE(last, 0) << "rank 0 joined first";
  } else {
    ASSERT_TRUE(store().get(key, test_deadline()).ok());
    StatusOr<int> j = join(std::chrono::milliseconds(60000));
    ASSERT_TRUE(j.ok()) << j.status().to_string();
    last = *j;
  }
  expect_same_last_joined("join.timeout", last);

  Handle h = join_async();
  EXPECT_EQ(h.name(), "hora.join");
  std::atomic<int> calls{0};
  h.on_complete([&](const Status& s) {
    EXPECT_TRUE(s.ok()) << s.to_string();
    ++calls;
  });
  ASSERT_TRUE(h.wait().ok());
  EXPECT_EQ(calls.load(), 1);
  expect_same_last_joined("join.async", h.last_joined());
}

}  // namespace
}  // namespace hora
