// The engine's pieces without communication: control-message encoding (and its refusal of
// corrupted bytes), request validation messages, the response cache, the fusion planner, the
// coordinator's decisions, the stall inspector, the tensor queue, InitOptions.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/engine/coordinator.h"
#include "core/engine/fusion_planner.h"
#include "core/engine/message.h"
#include "core/engine/name_table.h"
#include "core/engine/response_cache.h"
#include "core/engine/stall_inspector.h"
#include "core/engine/tensor_queue.h"
#include "core/init_options.h"
#include "core/layout.h"

namespace hora {
namespace engine {
namespace {

Request allreduce_request(const std::string& name, int rank, std::vector<int64_t> shape = {4, 5},
                          DataType dtype = DataType::kFloat32, ReduceOp op = ReduceOp::kSum) {
  Request r;
  r.name = name;
  r.type = CollectiveType::kAllreduce;
  r.rank = rank;
  r.shape = std::move(shape);
  r.dtype = dtype;
  r.op = op;
  return r;
}

Response allreduce_response(const std::string& name, int64_t elements,
                            DataType dtype = DataType::kFloat32) {
  Response r;
  r.name = name;
  r.type = CollectiveType::kAllreduce;
  r.dtype = dtype;
  r.shape = {elements};
  return r;
}

TEST(Wire, RequestsRoundTrip) {
  std::vector<Request> in = {allreduce_request("a", 1), allreduce_request("b", 1, {7})};
  in[1].type = CollectiveType::kAlltoall;
  in[1].splits = {3, 4};
  in[1].group_key = "g";
  in[1].group_size = 2;
  in[1].prescale = 0.25;
  in[1].waited_us = 123456789;
  auto out = decode_requests(encode_requests(in));
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_TRUE(same_signature(in[0], (*out)[0]));
  EXPECT_EQ((*out)[1].splits, in[1].splits);
  EXPECT_EQ((*out)[1].prescale, 0.25);
  EXPECT_EQ((*out)[1].group_key, "g");
  EXPECT_EQ((*out)[1].waited_us, 123456789);
}

TEST(Wire, EveryTruncationAndBadEnumIsAnErrorNotACrash) {
  ResponseList list;
  list.responses.push_back(allreduce_response("grad/fc1.weight", 20));
  list.responses.back().first_dims = {1, 2, 3};
  list.fatal = "x";
  const std::vector<uint8_t> bytes = encode_response_list(list);
  ASSERT_TRUE(decode_response_list(bytes).ok());
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
    auto r = decode_response_list(cut);
    ASSERT_FALSE(r.ok()) << "truncated at " << n;
    EXPECT_NE(r.status().message().find("corrupted control message"), std::string::npos);
  }
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_FALSE(decode_response_list(longer).ok());
  // The collective type byte follows the name (4-byte length + 15 bytes) after the header.
  std::vector<uint8_t> bad = bytes;
  bad[1 + 4 + 1 + 4 + 4 + 15] = 99;
  auto r = decode_response_list(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("collective type 99"), std::string::npos)
      << r.status().message();
}

// int16, uint16 and bool (wire values 8, 9, 10) travel like the first eight; a dtype byte of
// 11 or more is a corrupted message, not a crash.
TEST(Wire, EveryDtypeRoundTripsAndElevenIsRejected) {
  std::vector<Request> in;
  for (int d = 0; d < kNumDataTypes; ++d)
    in.push_back(allreduce_request("t" + std::to_string(d), 0, {3}, static_cast<DataType>(d),
                                   ReduceOp::kMax));
  auto out = decode_requests(encode_requests(in));
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_EQ(out->size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ((*out)[i].dtype, in[i].dtype) << i;
  EXPECT_EQ((*out)[10].dtype, DataType::kBool);

  // The dtype byte is the one byte where a bool request and an int16 request differ.
  const std::vector<uint8_t> as_bool =
      encode_requests({allreduce_request("x", 0, {3}, DataType::kBool, ReduceOp::kMax)});
  const std::vector<uint8_t> as_int16 =
      encode_requests({allreduce_request("x", 0, {3}, DataType::kInt16, ReduceOp::kMax)});
  ASSERT_EQ(as_bool.size(), as_int16.size());
  size_t at = 0, differing = 0;
  for (size_t i = 0; i < as_bool.size(); ++i) {
    if (as_bool[i] != as_int16[i]) {
      at = i;
      ++differing;
    }
  }
  ASSERT_EQ(differing, 1u);
  ASSERT_EQ(as_bool[at], 10);
  for (uint8_t bad : {uint8_t{11}, uint8_t{12}, uint8_t{255}}) {
    std::vector<uint8_t> corrupt = as_bool;
    corrupt[at] = bad;
    auto r = decode_requests(corrupt);
    ASSERT_FALSE(r.ok()) << int(bad);
    EXPECT_NE(r.status().message().find("dtype " + std::to_string(bad)), std::string::npos)
        << r.status().message();
  }
}

TEST(Validate, NamesTensorFieldRanksAndValues) {
  Request a = allreduce_request("fc1.weight", 0, {4, 5});
  Request b = allreduce_request("fc1.weight", 1, {4, 6});
  EXPECT_EQ(validate_requests({&a, &b}, 2),
            "tensor 'fc1.weight': allreduce shape [4,5] on rank 0 but [4,6] on rank 1");
  b = allreduce_request("fc1.weight", 1, {4, 5}, DataType::kFloat16);
  EXPECT_EQ(validate_requests({&a, &b}, 2),
            "tensor 'fc1.weight': allreduce dtype float32 on rank 0 but float16 on rank 1");
  b = allreduce_request("fc1.weight", 1);
  b.postscale = 0.5;
  EXPECT_NE(validate_requests({&a, &b}, 2).find("postscale 1 on rank 0 but 0.5 on rank 1"),
            std::string::npos);
  b = allreduce_request("fc1.weight", 1);
  EXPECT_EQ(validate_requests({&a, &b}, 2), "");
  // Allgather rows may differ; the other dimensions may not.
  a.type = b.type = CollectiveType::kAllgather;
  a.shape = {3, 5};
  b.shape = {1, 5};
  EXPECT_EQ(validate_requests({&a, &b}, 2), "");
  b.shape = {1, 6};
  EXPECT_NE(validate_requests({&a, &b}, 2).find("all but the first dimension"), std::string::npos);
  Request c = allreduce_request("t", 0);
  c.type = CollectiveType::kBroadcast;
  c.root = 3;
  EXPECT_NE(validate_requests({&c}, 2).find("broadcast root 3 is not a rank"), std::string::npos);
}

TEST(ResponseCache, PositionsEvictionAndReuseAreDeterministic) {
  ResponseCache cache(3);
  int evicted = -2;
  EXPECT_EQ(cache.insert(allreduce_response("a", 1), &evicted), 0);
  EXPECT_EQ(evicted, -1);
  EXPECT_EQ(cache.insert(allreduce_response("b", 1), &evicted), 1);
  EXPECT_EQ(cache.insert(allreduce_response("c", 1), &evicted), 2);
  cache.touch(0);  // a is now newer than b
  EXPECT_EQ(cache.insert(allreduce_response("d", 1), &evicted), 1);
  EXPECT_EQ(evicted, 1);
  EXPECT_EQ(cache.find("b"), -1);
  EXPECT_EQ(cache.find("d"), 1);
  EXPECT_EQ(cache.evictions(), 1);
  cache.erase(0);
  cache.erase(2);
  EXPECT_EQ(cache.insert(allreduce_response("e", 1), &evicted), 0);  // lowest free first
  EXPECT_EQ(cache.position_count(), 3);
  ResponseCache off(0);
  EXPECT_EQ(off.insert(allreduce_response("a", 1), &evicted), -1);
  EXPECT_EQ(off.position_count(), 0);
}

TEST(ResponseCache, MatchesOnlyTheSameRequest) {
  Response r = allreduce_response("a", 20);
  r.shape = {4, 5};
  Request q = allreduce_request("a", 3);
  EXPECT_TRUE(ResponseCache::matches(q, r));
  q.shape = {5, 4};
  EXPECT_FALSE(ResponseCache::matches(q, r));
  q = allreduce_request("a", 3);
  q.op = ReduceOp::kMax;
  EXPECT_FALSE(ResponseCache::matches(q, r));
  Response g = allreduce_response("g", 1);
  g.type = CollectiveType::kAllgather;
  EXPECT_FALSE(ResponseCache::cacheable(g));
  r.error = "x";
  EXPECT_FALSE(ResponseCache::cacheable(r));
}

std::vector<std::vector<int>> members(const std::vector<Bucket>& buckets) {
  std::vector<std::vector<int>> out;
  for (const Bucket& b : buckets) out.push_back(b.members);
  return out;
}

TEST(FusionPlanner, PacksUpToTheThresholdAndLooksPastOneIncompatible) {
  std::vector<Response> list;
  for (int i = 0; i < 4; ++i) list.push_back(allreduce_response("f" + std::to_string(i), 100));
  // 400-byte tensors, threshold 1000: two buckets of two... of 2 + 2 (800 fits, 1200 not).
  auto b = members(plan_buckets(list, 1000));
  EXPECT_EQ(b, (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(members(plan_buckets(list, 0)), (std::vector<std::vector<int>>{{0}, {1}, {2}, {3}}));
  // Mixed precision interleaved: f16, f32, f16, f32 -> all f16 together, all f32 together.
  std::vector<Response> mixed;
  for (int i = 0; i < 6; ++i)
    mixed.push_back(allreduce_response("m" + std::to_string(i), 10,
                                       i % 2 ? DataType::kFloat32 : DataType::kFloat16));
  EXPECT_EQ(members(plan_buckets(mixed, 1 << 20)),
            (std::vector<std::vector<int>>{{0, 2, 4}, {1, 3, 5}}));
  // Two incompatible in a row end the scan.
  std::vector<Response> stop = {
      allreduce_response("a", 1), allreduce_response("b", 1, DataType::kInt32),
      allreduce_response("c", 1, DataType::kInt64), allreduce_response("d", 1)};
  EXPECT_EQ(members(plan_buckets(stop, 1 << 20)),
            (std::vector<std::vector<int>>{{0}, {1}, {2}, {3}}));
  // A compatible tensor that does not fit closes the bucket, even if a later one would fit.
  std::vector<Response> full = {allreduce_response("p", 150), allreduce_response("q", 150),
                                allreduce_response("r", 25)};
  EXPECT_EQ(members(plan_buckets(full, 1000)), (std::vector<std::vector<int>>{{0}, {1, 2}}));
}

TEST(FusionPlanner, APlannerReusedAcrossRoundsPlansAsAFreshOne) {
  FusionPlanner planner;
  std::vector<std::vector<Response>> rounds(3);
  for (int i = 0; i < 6; ++i) rounds[0].push_back(allreduce_response("a" + std::to_string(i), 100));
  rounds[1].push_back(allreduce_response("b", 100));
  for (int i = 0; i < 4; ++i) {
    Response g = allreduce_response("g" + std::to_string(i), 50,
                                    i % 2 ? DataType::kFloat64 : DataType::kFloat32);
    g.group_key = "g0#group";
    g.group_size = 4;
    rounds[2].push_back(g);
  }
  rounds[2].push_back(allreduce_response("c", 300));
  for (int pass = 0; pass < 2; ++pass) {
    for (const std::vector<Response>& list : rounds) {
      EXPECT_EQ(members(planner.plan(list, 1000)), members(plan_buckets(list, 1000)));
      EXPECT_EQ(members(planner.plan(list, 0)), members(plan_buckets(list, 0)));
    }
  }
}

TEST(FusionPlanner, ARepeatedListGetsThePlanKeptUnderItsId) {
  FusionPlanner planner;
  // Eight tensors each, of a size per list: six different plans under 4000 bytes.
  const int64_t elements[] = {100, 1000, 300, 150, 500, 200};
  std::vector<std::vector<Response>> lists(6);
  for (size_t k = 0; k < lists.size(); ++k)
    for (int i = 0; i < 8; ++i)
      lists[k].push_back(allreduce_response("t" + std::to_string(i), elements[k]));
  auto fresh = [&](size_t k, int64_t threshold) {
    return members(plan_buckets(lists[k], threshold));
  };
  for (size_t k = 1; k < lists.size(); ++k) ASSERT_NE(fresh(k, 4000), fresh(k - 1, 4000)) << k;
  // Four lists with ids (kept), one without.
  for (size_t k = 0; k < 4; ++k)
    EXPECT_EQ(members(planner.plan(lists[k], 4000, 10 + k)), fresh(k, 4000));
  EXPECT_EQ(members(planner.plan(lists[4], 4000)), fresh(4, 4000));
  // Each repeat gets its own list's plan, not the last one's.
  for (size_t k : {0, 2, 1, 3, 0})
    EXPECT_EQ(members(planner.plan(lists[k], 4000, 10 + k, true)), fresh(k, 4000)) << k;
  // The kept plan stands for the list only at its length and threshold, else it is planned.
  std::vector<Response> shorter(lists[1].begin(), lists[1].begin() + 3);
  EXPECT_EQ(members(planner.plan(shorter, 4000, 11, true)), members(plan_buckets(shorter, 4000)));
  EXPECT_EQ(members(planner.plan(lists[1], 1500, 11, true)), fresh(1, 1500));
  EXPECT_EQ(members(planner.plan(lists[5], 4000, 99, true)), fresh(5, 4000));  // never kept
  // More ids than the plans kept: each list still gets its own plan (made again when no longer
  // kept).
  EXPECT_EQ(members(planner.plan(lists[4], 4000, 14)), fresh(4, 4000));
  for (size_t k : {1, 2, 3, 4})
    EXPECT_EQ(members(planner.plan(lists[k], 4000, 10 + k, true)), fresh(k, 4000)) << k;
}

TEST(FusionPlanner, ManySmallTensorsUnderATinyThresholdEachGetABucket) {
  std::vector<Response> list;
  for (int i = 0; i < 20000; ++i) list.push_back(allreduce_response("t" + std::to_string(i), 1));
  std::vector<Bucket> b = plan_buckets(list, 0);
  ASSERT_EQ(b.size(), list.size());
  for (size_t i = 0; i < b.size(); ++i)
    ASSERT_EQ(b[i].members, std::vector<int>{static_cast<int>(i)});
  EXPECT_EQ(plan_buckets(list, 64 * 1024 * 1024).size(), 1u);
}

TEST(FusionPlanner, GroupsStayWholeAndOthersStandAlone) {
  std::vector<Response> list;
  for (int i = 0; i < 3; ++i) {
    list.push_back(allreduce_response("g" + std::to_string(i), 1000));
    list.back().group_key = "g0#group";
    list.back().group_size = 3;
  }
  Response bc = allreduce_response("bc", 10);
  bc.type = CollectiveType::kBroadcast;
  list.push_back(bc);
  Response err = allreduce_response("err", 10);
  err.error = "mismatch";
  list.push_back(err);
  auto b = members(plan_buckets(list, 100));  // the group exceeds the threshold: one bucket
  EXPECT_EQ(b, (std::vector<std::vector<int>>{{0, 1, 2}, {3}, {4}}));
}

TEST(FusionPlanner, AGroupOfSeveralDtypesBecomesOneBucketPerDtype) {
  // One bucket reduces one dtype: a group's float64 member must not ride in the float32
  // bucket of its first member.
  std::vector<Response> list = {
      allreduce_response("a", 5), allreduce_response("b", 3, DataType::kFloat64),
      allreduce_response("c", 4, DataType::kInt32), allreduce_response("d", 2)};
  for (Response& r : list) {
    r.group_key = "a#group";
    r.group_size = 4;
  }
  EXPECT_EQ(members(plan_buckets(list, 1 << 20)),
            (std::vector<std::vector<int>>{{0, 3}, {1}, {2}}));
}

TEST(Coordinator, ReadyOnlyWhenEveryRankAskedAndErrorsOnMismatch) {
  const auto now = std::chrono::steady_clock::now();
  Coordinator c(3);
  c.ingest(0, {allreduce_request("x", 0), allreduce_request("y", 0)}, now);
  c.ingest(1, {allreduce_request("x", 1), allreduce_request("y", 1, {4, 6})}, now);
  EXPECT_TRUE(c.collect().empty());
  auto pending = c.pending();
  ASSERT_EQ(pending.size(), 2u);
  EXPECT_EQ(pending[0].ready_ranks, (std::vector<int>{0, 1}));
  c.ingest(2, {allreduce_request("y", 2), allreduce_request("x", 2)}, now);
  auto out = c.collect();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].name, "x");  // first-arrival order
  EXPECT_FALSE(out[0].is_error());
  EXPECT_EQ(out[1].error, "tensor 'y': allreduce shape [4,5] on rank 0 but [4,6] on rank 1");
  EXPECT_EQ(c.table_size(), 0u);
}

TEST(Coordinator, JoinedRanksCountAndOnlySumTakesTheirZeros) {
  const auto now = std::chrono::steady_clock::now();
  Coordinator c(3);
  Request join;
  join.name = "hora.join";
  join.type = CollectiveType::kJoin;
  c.ingest(2, {join}, now);
  c.ingest(0,
           {allreduce_request("s", 0),
            allreduce_request("m", 0, {4, 5}, DataType::kFloat32, ReduceOp::kMin)},
           now);
  c.ingest(1,
           {allreduce_request("s", 1),
            allreduce_request("m", 1, {4, 5}, DataType::kFloat32, ReduceOp::kMin)},
           now);
  auto out = c.collect();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FALSE(out[0].is_error());
  EXPECT_NE(out[1].error.find("rank(s) 2 have joined"), std::string::npos) << out[1].error;
  c.ingest(0, {join}, now);
  EXPECT_TRUE(c.collect().empty());
  c.ingest(1, {join}, now);
  out = c.collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, CollectiveType::kJoin);
  EXPECT_EQ(out[0].last_joined, 1);
}

// A join that went out a round late (its rank's engine was inside a round when it was called)
// carries how long it waited there: the last rank to join is the last to call join, not the
// last to reach the coordinator.
TEST(Coordinator, LastJoinedFollowsTheCallsNotTheRounds) {
  const auto t0 = std::chrono::steady_clock::now();
  Request join;
  join.name = "hora.join";
  join.type = CollectiveType::kJoin;
  Coordinator c(3);
  c.ingest(0, {}, t0);
  c.ingest(1, {join}, t0);
  c.ingest(2, {join}, t0);
  EXPECT_TRUE(c.collect().empty());
  // Rank 0 called join 100 ms before the first round's arrivals; it reaches the coordinator
  // 10 ms after them.
  join.waited_us = 110000;
  c.ingest(0, {join}, t0 + std::chrono::milliseconds(10));
  auto out = c.collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].last_joined, 2);
  // Waits short enough that the late arrival is still the last call: it is the last joiner.
  join.waited_us = 0;
  c.ingest(1, {join}, t0);
  c.ingest(2, {join}, t0);
  join.waited_us = 5000;
  c.ingest(0, {join}, t0 + std::chrono::milliseconds(10));
  out = c.collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].last_joined, 0);
}

TEST(Coordinator, GroupReleasedWhole) {
  const auto now = std::chrono::steady_clock::now();
  Coordinator c(2);
  auto member = [](const std::string& n, int rank) {
    Request r = allreduce_request(n, rank);
    r.group_key = "a#group";
    r.group_size = 2;
    return r;
  };
  c.ingest(0, {member("a", 0), member("b", 0)}, now);
  c.ingest(1, {member("a", 1)}, now);
  EXPECT_TRUE(c.collect().empty());  // 'a' is ready, but 'b' is not
  c.ingest(1, {member("b", 1)}, now);
  EXPECT_EQ(c.collect().size(), 2u);
}

TEST(StallInspector, DescribesReadyAndMissingAndTurnsFatal) {
  const auto now = std::chrono::steady_clock::now();
  std::vector<StalledTensor> s = {{"late", {0, 2}, now - std::chrono::seconds(5)}};
  EXPECT_EQ(StallInspector::describe(s, 4, 5), "'late' (ready: 0,2; missing: 1,3)");
  StallInspector warn_only(1.0, 0.0, 4);
  EXPECT_EQ(warn_only.check(s, now), "");
  EXPECT_EQ(warn_only.warnings(), 1);
  EXPECT_EQ(warn_only.check(s, now), "");
  EXPECT_EQ(warn_only.warnings(), 1);  // at most one warning per period
  StallInspector fatal(1.0, 3.0, 4);
  EXPECT_NE(fatal.check(s, now).find("'late' (ready: 0,2; missing: 1,3)"), std::string::npos);
  std::vector<StalledTensor> young = {{"young", {0}, now}};
  EXPECT_EQ(fatal.check(young, now), "");
}

TEST(TensorQueue, RefusesANameInFlightAndFailsAfterClose) {
  TensorQueue q;
  auto entry = [](const std::string& name) {
    Entry e;
    e.request.name = name;
    e.handle = std::make_shared<detail::HandleState>(name, 1, 1.0);
    return e;
  };
  std::vector<Entry> one;
  one.push_back(entry("a"));
  ASSERT_TRUE(q.enqueue(std::move(one)).ok());
  std::vector<Entry> again;
  again.push_back(entry("b"));
  again.push_back(entry("a"));
  Status s = q.enqueue(std::move(again));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tensor 'a'"), std::string::npos);
  EXPECT_EQ(q.in_flight(), 1u);  // nothing of the refused batch was added
  EXPECT_EQ(q.take_new().size(), 1u);
  auto left = q.close(Status::failed_precondition("closed"));
  EXPECT_EQ(left.size(), 1u);
  std::vector<Entry> late;
  late.push_back(entry("c"));
  EXPECT_EQ(q.enqueue(std::move(late)).code(), StatusCode::kFailedPrecondition);
}

TEST(TensorQueue, ASlotIsReusedByItsNameAndEntriesStayWhereTheyLie) {
  TensorQueue q;
  auto batch = [](const std::string& name) {
    std::vector<Entry> one(1);
    one[0].request.name = name;
    one[0].handle = std::make_shared<detail::HandleState>(name, 1, 1.0);
    return one;
  };
  ASSERT_TRUE(q.enqueue(batch("a")).ok());
  ASSERT_TRUE(q.enqueue(batch("b")).ok());
  std::vector<Request*> taken;
  q.take_new(&taken);
  ASSERT_EQ(taken.size(), 2u);
  Entry* a = q.find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(taken[0]->local_entry, a);  // the round reads the request in its entry
  EXPECT_EQ(&a->request, taken[0]);
  EXPECT_GE(a->request.name_id, 0);
  EXPECT_NE(a->request.name_id, taken[1]->name_id);
  std::weak_ptr<detail::HandleState> handle = a->handle;
  q.remove_all({a});
  EXPECT_TRUE(handle.expired());  // released with the slot
  EXPECT_EQ(q.find("a"), nullptr);
  EXPECT_EQ(q.in_flight(), 1u);
  ASSERT_TRUE(q.enqueue(batch("a")).ok());
  EXPECT_EQ(q.find("a"), a);  // the name's slot again
  q.remove("b");
  EXPECT_EQ(q.in_flight(), 1u);
  EXPECT_EQ(q.close(Status::failed_precondition("closed")).size(), 1u);
  EXPECT_EQ(q.in_flight(), 0u);
}

TEST(TensorQueue, ManyOneOffNamesAreForgottenOnceLeftAndTheirIdsReused) {
  TensorQueue q;
  int32_t largest = -1;
  for (int i = 0; i < 6000; ++i) {  // past the names kept interned (unnamed calls draw new ones)
    std::vector<Entry> one(1);
    one[0].request.name = "allreduce.noname." + std::to_string(i);
    ASSERT_TRUE(q.enqueue(std::move(one)).ok());
    Entry* e = q.find("allreduce.noname." + std::to_string(i));
    ASSERT_NE(e, nullptr);
    largest = std::max(largest, e->request.name_id);
    q.remove_all({e});
  }
  EXPECT_LT(largest, 4200);  // ids of forgotten names were given out again
  EXPECT_EQ(q.in_flight(), 0u);
  EXPECT_EQ(q.find("allreduce.noname.5999"), nullptr);
}

TEST(TensorQueue, AnAllreduceFilledInPlaceIsTheEntryABatchWouldHold) {
  TensorQueue q;
  float data[6] = {};
  TensorView in = TensorView::make(data, DataType::kFloat32, {2, 3}).value();
  auto spec = [&](const std::string* name) {
    AllreduceSpec s;
    s.name = name;
    s.in = &in;
    s.out = &in;
    s.handle = std::make_shared<detail::HandleState>(*name, 1, 1.0);
    s.op = ReduceOp::kAverage;
    s.prescale = 2.0;
    return s;
  };
  const std::string a = "a";
  // A slot used before by a grouped entry of the same name: nothing of it is left.
  std::vector<Entry> group(1);
  group[0].request.name = a;
  group[0].request.group_key = "a#group";
  group[0].request.group_size = 1;
  ASSERT_TRUE(q.enqueue(std::move(group)).ok());
  std::vector<Request*> taken;
  q.take_new(&taken);  // the round took it, and the executor completed it
  q.remove("a");
  ASSERT_TRUE(q.enqueue_allreduce(spec(&a)).ok());
  Entry* e = q.find("a");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->request.name, "a");
  EXPECT_EQ(e->request.op, ReduceOp::kAverage);
  EXPECT_EQ(e->request.prescale, 2.0);
  EXPECT_EQ(e->request.shape, SmallShape({2, 3}));
  EXPECT_TRUE(e->request.group_key.empty());
  EXPECT_EQ(e->request.group_size, 0);
  EXPECT_EQ(e->request.local_entry, e);
  EXPECT_EQ(e->in.data(), data);
  Status again = q.enqueue_allreduce(spec(&a));
  EXPECT_EQ(again.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(again.message().find("tensor 'a'"), std::string::npos);
  q.take_new(&taken);
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0], &e->request);
  q.close(Status::failed_precondition("closed"));
  EXPECT_EQ(q.enqueue_allreduce(spec(&a)).code(), StatusCode::kFailedPrecondition);
}

TEST(NameTable, InternsOnceAndReusesAForgottenId) {
  NameTable t;
  bool added = false;
  const int32_t a = t.intern("a", &added);
  EXPECT_TRUE(added);
  EXPECT_EQ(t.intern("a", &added), a);
  EXPECT_FALSE(added);
  const int32_t b = t.intern("b", &added);
  EXPECT_NE(a, b);
  EXPECT_EQ(t.find("b"), b);
  EXPECT_EQ(t.name(b), "b");
  EXPECT_EQ(t.find("c"), -1);
  t.forget(a);
  EXPECT_EQ(t.find("a"), -1);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.intern("c", &added), a);  // the forgotten id goes to the next new name
  EXPECT_EQ(t.name(a), "c");
  EXPECT_EQ(t.id_bound(), 2);
}

TEST(NameTable, TheGuessedNextIdIsCheckedAgainstTheName) {
  NameTable t;
  bool added = false;
  const int32_t a = t.intern("a", &added), b = t.intern("b", &added), c = t.intern("c", &added);
  for (int step = 0; step < 3; ++step) {  // the order of a step, guessed from the last
    EXPECT_EQ(t.intern("a", &added), a);
    EXPECT_EQ(t.intern("b", &added), b);
    EXPECT_EQ(t.intern("c", &added), c);
    EXPECT_FALSE(added);
  }
  // Another order: each guess is wrong and the name decides.
  EXPECT_EQ(t.intern("c", &added), c);
  EXPECT_EQ(t.intern("a", &added), a);
  EXPECT_EQ(t.intern("b", &added), b);
  EXPECT_FALSE(added);
  // b's id forgotten and given to "d": after "a" the guess is that id, now another name's.
  EXPECT_EQ(t.intern("a", &added), a);
  t.forget(b);
  EXPECT_EQ(t.intern("d", &added), b);
  EXPECT_TRUE(added);
  EXPECT_EQ(t.intern("a", &added), a);
  const int32_t b2 = t.intern("b", &added);
  EXPECT_TRUE(added);
  EXPECT_NE(b2, b);
  EXPECT_EQ(t.name(b2), "b");
  EXPECT_EQ(t.name(b), "d");
  // A guess whose id was forgotten (no name now) falls back to the hash too.
  EXPECT_EQ(t.intern("a", &added), a);
  EXPECT_EQ(t.intern("b", &added), b2);
  t.forget(b2);
  EXPECT_EQ(t.intern("a", &added), a);
  EXPECT_EQ(t.intern("b", &added), b2);  // new again, in the freed id
  EXPECT_TRUE(added);
  EXPECT_EQ(t.intern("c", &added), c);
  EXPECT_FALSE(added);
}

TEST(ResponseCache, FindsByNameIdAndChecksTheName) {
  ResponseCache cache(4);
  int evicted = -1;
  ASSERT_EQ(cache.insert(allreduce_response("a", 1), &evicted), 0);
  ASSERT_EQ(cache.insert(allreduce_response("b", 1), &evicted), 1);
  EXPECT_EQ(cache.find("b", 7), 1);  // by name, then remembered under id 7
  EXPECT_EQ(cache.find("b", 7), 1);
  EXPECT_EQ(cache.find("a", 7), 0);  // id 7 now names "a": the name is checked
  cache.erase(0);
  EXPECT_EQ(cache.find("a", 7), -1);
  EXPECT_EQ(cache.find("b", -1), 1);
}

TEST(InitOptions, SettingsOverrideTheEnvironmentAndTyposAreErrors) {
  InitOptions o;
  o.settings = {{"HORA_FUSION_THRESHOLD", "1K"}};
  auto lookup = make_lookup(o);
  ASSERT_TRUE(lookup.ok());
  auto config = Config::from_lookup(*lookup);
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  EXPECT_EQ(config->fusion_threshold_bytes, 1024);
  o.settings = {{"HORA_FUSION_TRESHOLD", "0"}};
  auto bad = make_lookup(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("HORA_FUSION_TRESHOLD"), std::string::npos);
  EXPECT_NE(bad.status().message().find("docs/configuration.md"), std::string::npos);
}

// Every HORA_* variable Config and the rank layout ask for is one InitOptions accepts: the
// names are recorded from the lookups themselves, not from a list kept beside them.
TEST(InitOptions, AcceptsEveryVariableConfigAndTheLayoutRead) {
  std::vector<std::string> asked;
  const char* const horarun[][2] = {{"HORA_RANK", "0"}, {"HORA_SIZE", "1"}};
  auto record = [&](const char* name) -> const char* {
    asked.push_back(name);
    for (const auto& kv : horarun)
      if (std::string(name) == kv[0]) return kv[1];
    return nullptr;
  };
  ASSERT_TRUE(Config::from_lookup(record).ok());
  ASSERT_TRUE(read_rank_layout(record).ok());
  int hora_variables = 0;
  for (const std::string& name : asked) {
    if (name.rfind("HORA_", 0) != 0) continue;
    ++hora_variables;
    InitOptions o;
    o.settings = {{name, "1"}};
    EXPECT_TRUE(make_lookup(o).ok()) << name << " is read but InitOptions refuses it";
  }
  EXPECT_GE(hora_variables, 30);  // Config's 22 settings and horarun's layout
  for (const char* name : {"HORA_AUTOTUNE", "HORA_AUTOTUNE_SAMPLES", "HORA_HIERARCHICAL_ALLREDUCE",
                           "HORA_HIERARCHICAL_ALLGATHER"})
    EXPECT_NE(std::find(asked.begin(), asked.end(), name), asked.end()) << name;
}

}  // namespace
}  // namespace engine
}  // namespace hora
