// A request's content version (Request::version): the tensor queue keeps it while a name is
// enqueued with the same request step after step and gives a new one when anything changes;
// the response cache matches a version it matched before without comparing fields, and only
// while the response at that position is the one it matched (ResponseCache::lookup).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/engine/message.h"
#include "core/engine/response_cache.h"
#include "core/engine/tensor_queue.h"
#include "hora/tensor_view.h"

namespace hora {
namespace engine {
namespace {

// Enqueues an allreduce of `view` under `name` into `q`, takes it as a round would, and
// removes it as the executor does after completing it: returns its request's version.
uint32_t cycle(TensorQueue& q, const std::string& name, const TensorView& view,
               ReduceOp op = ReduceOp::kSum, double prescale = 1.0) {
  AllreduceSpec spec;
  spec.name = &name;
  spec.in = &view;
  spec.out = &view;
  spec.handle = std::make_shared<detail::HandleState>(name, 1, 1.0);
  spec.op = op;
  spec.prescale = prescale;
  EXPECT_TRUE(q.enqueue_allreduce(std::move(spec)).ok());
  std::vector<Request*> taken;
  q.take_new(&taken);
  EXPECT_EQ(taken.size(), 1u);
  const uint32_t version = taken.empty() ? 0 : taken[0]->version;
  q.remove(name);
  return version;
}

TEST(RequestVersion, KeptForTheSameRequestAndNewForAnyChange) {
  TensorQueue q;
  float data[6] = {};
  const TensorView a23 = TensorView::make(data, DataType::kFloat32, {2, 3}).value();
  const TensorView a32 = TensorView::make(data, DataType::kFloat32, {3, 2}).value();
  const TensorView i23 = TensorView::make(data, DataType::kInt32, {2, 3}).value();
  const uint32_t first = cycle(q, "w", a23);
  EXPECT_NE(first, 0u);
  EXPECT_EQ(cycle(q, "w", a23), first);  // the next step's request: the same
  EXPECT_EQ(cycle(q, "w", a23), first);
  const uint32_t shape = cycle(q, "w", a32);
  EXPECT_NE(shape, first);
  const uint32_t dtype = cycle(q, "w", i23);
  EXPECT_NE(dtype, shape);
  const uint32_t op = cycle(q, "w", i23, ReduceOp::kMax);
  EXPECT_NE(op, dtype);
  const uint32_t scale = cycle(q, "w", i23, ReduceOp::kMax, 2.0);
  EXPECT_NE(scale, op);
  EXPECT_EQ(cycle(q, "w", i23, ReduceOp::kMax, 2.0), scale);
  // Back to an earlier request: a new version all the same (versions only move forward).
  const uint32_t back = cycle(q, "w", a23);
  EXPECT_NE(back, first);
  EXPECT_NE(back, scale);
  // Another name has versions of its own slot.
  EXPECT_NE(cycle(q, "v", a23), 0u);
}

// The entry's views are those of the latest enqueue, whatever the version: a step may hand
// over new buffers, an output of another shape (same element count) or another stream under
// the same request (the queue writes only the fields that differ).
TEST(RequestVersion, TheEntryHoldsEachEnqueuesViewsWhenTheRequestIsTheSame) {
  TensorQueue q;
  float a[6] = {}, b[6] = {}, c[6] = {};
  const TensorView va = TensorView::make(a, DataType::kFloat32, {2, 3}).value();
  const TensorView vb = TensorView::make(b, DataType::kFloat32, {2, 3}).value();
  const TensorView vc = TensorView::make(c, DataType::kFloat32, {6}).value();
  int stream = 0;
  struct Case {
    TensorView in, out;
  };
  const Case cases[] = {{va, va}, {va, va}, {vb, vb}, {va, vc}, {va, va.with_stream(&stream)}};
  uint32_t version = 0;
  for (const Case& k : cases) {
    const std::string name = "w";
    AllreduceSpec spec;
    spec.name = &name;
    spec.in = &k.in;
    spec.out = &k.out;
    spec.handle = std::make_shared<detail::HandleState>(name, 1, 1.0);
    ASSERT_TRUE(q.enqueue_allreduce(std::move(spec)).ok());
    const Entry* e = q.find(name);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->in.data(), k.in.data());
    EXPECT_EQ(e->out.data(), k.out.data());
    EXPECT_EQ(e->out.shape(), k.out.shape());
    EXPECT_EQ(e->out.stream(), k.out.stream());
    EXPECT_EQ(e->out.element_count(), 6);
    std::vector<Request*> taken;
    q.take_new(&taken);
    ASSERT_EQ(taken.size(), 1u);
    if (version != 0) {
      EXPECT_EQ(taken[0]->version, version);  // the request is the input's
    }
    version = taken[0]->version;
    q.remove(name);
  }
}

TEST(RequestVersion, ABatchEnqueueAlwaysGivesANewVersion) {
  TensorQueue q;
  float data[6] = {};
  const TensorView view = TensorView::make(data, DataType::kFloat32, {2, 3}).value();
  const uint32_t single = cycle(q, "g", view);
  std::vector<Entry> batch(1);
  batch[0].request.name = "g";
  batch[0].request.shape = {2, 3};
  ASSERT_TRUE(q.enqueue(std::move(batch)).ok());
  std::vector<Request*> taken;
  q.take_new(&taken);
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_NE(taken[0]->version, 0u);
  EXPECT_NE(taken[0]->version, single);
  const uint32_t batched = taken[0]->version;
  q.remove("g");
  // The single path compares against what the batch left in the slot: the same request, so
  // the same version; a batch of it again: a new one.
  EXPECT_EQ(cycle(q, "g", view), batched);
  std::vector<Entry> again(1);
  again[0].request.name = "g";
  again[0].request.shape = {2, 3};
  ASSERT_TRUE(q.enqueue(std::move(again)).ok());
  q.take_new(&taken);
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_NE(taken[0]->version, batched);
}

TEST(RequestVersion, AForgottenIdTakenByAnotherNameGetsANewVersion) {
  TensorQueue q;
  float data[1] = {};
  const TensorView view = TensorView::make(data, DataType::kFloat32, {1}).value();
  // Past the names the queue keeps interned, ids of forgotten names are given out again: the
  // request of a new name in a reused slot never carries the version of the name before.
  std::vector<uint32_t> seen_for_id(8192, 0);
  for (int i = 0; i < 6000; ++i) {
    const std::string name = "allreduce.noname." + std::to_string(i);
    AllreduceSpec spec;
    spec.name = &name;
    spec.in = &view;
    spec.out = &view;
    spec.handle = std::make_shared<detail::HandleState>(name, 1, 1.0);
    ASSERT_TRUE(q.enqueue_allreduce(std::move(spec)).ok());
    std::vector<Request*> taken;
    q.take_new(&taken);
    ASSERT_EQ(taken.size(), 1u);
    const auto id = static_cast<size_t>(taken[0]->name_id);
    ASSERT_LT(id, seen_for_id.size());
    ASSERT_NE(taken[0]->version, seen_for_id[id]) << name;
    seen_for_id[id] = taken[0]->version;
    q.remove(name);
  }
}

Response response_for(const Request& q) {
  Response r;
  r.name = q.name;
  r.type = q.type;
  r.dtype = q.dtype;
  r.shape = q.shape;
  return r;
}

Request versioned(const std::string& name, int32_t id, uint32_t version, SmallShape shape) {
  Request q;
  q.name = name;
  q.shape = std::move(shape);
  q.name_id = id;
  q.version = version;
  return q;
}

TEST(ResponseCacheLookup, AMatchedVersionMatchesWhileItsPositionHoldsTheSameResponse) {
  ResponseCache cache(2);
  int evicted = -1;
  Request q = versioned("a", 3, 7, {4, 5});
  ASSERT_EQ(cache.insert(response_for(q), &evicted), 0);
  int position = -2;
  ASSERT_TRUE(cache.lookup(q, &position));
  EXPECT_EQ(position, 0);
  // The version stands for the request's content: matched once, it matches again without its
  // fields being compared (the queue gives a new version when any of them changes).
  Request same_version = q;
  same_version.shape = {20};
  EXPECT_TRUE(cache.lookup(same_version, &position));
  EXPECT_EQ(position, 0);
  // Another version is compared field by field.
  Request other = same_version;
  other.version = 8;
  EXPECT_FALSE(cache.lookup(other, &position));
  EXPECT_EQ(position, 0);  // the name's position, to invalidate
  // No version (a decoded request): compared too.
  other.version = 0;
  EXPECT_FALSE(cache.lookup(other, &position));
  // The position's response replaced by another of the same name: version 7 is compared anew.
  cache.erase(0);
  Request changed = versioned("a", 3, 9, {20});
  ASSERT_EQ(cache.insert(response_for(changed), &evicted), 0);
  EXPECT_FALSE(cache.lookup(q, &position));  // {4, 5} is compared: the response is {20}
  EXPECT_EQ(position, 0);
  EXPECT_TRUE(cache.lookup(changed, &position));
  EXPECT_EQ(position, 0);
}

TEST(ResponseCacheLookup, AnEvictedPositionIsNotMatchedByItsOldVersion) {
  ResponseCache cache(1);
  int evicted = -1;
  Request a = versioned("a", 0, 1, {4});
  ASSERT_EQ(cache.insert(response_for(a), &evicted), 0);
  int position = -2;
  ASSERT_TRUE(cache.lookup(a, &position));
  Request b = versioned("b", 1, 1, {4});
  ASSERT_EQ(cache.insert(response_for(b), &evicted), 0);  // evicts "a" from position 0
  EXPECT_EQ(evicted, 0);
  EXPECT_FALSE(cache.lookup(a, &position));
  EXPECT_EQ(position, -1);  // "a" is not cached any more
  EXPECT_TRUE(cache.lookup(b, &position));
  EXPECT_EQ(position, 0);
}

}  // namespace
}  // namespace engine
}  // namespace hora
