// Controller over in-process ranks: the names of a round's responses are the requests' names,
// round after round, whether they went through the coordinator or the cache, and whether the
// engine handed the previous lists back (recycle: the cache hits then copy into the names'
// kept buffers) or not. A step that agrees a kept list's positions again is that list, with
// the step's own entries, and only while none of its positions changed.
#include "core/engine/controller.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/engine/tensor_queue.h"
#include "tests/support/multi_rank.h"

namespace hora {
namespace engine {
namespace {

// Long enough to live on the heap; the lengths differ, so a buffer kept from a longer name
// and not fully overwritten would show.
std::string long_name(int step_set, int i) {
  return "model.encoder.layers." + std::to_string(i) +
         std::string(static_cast<size_t>(i % 5), 'x') + ".weight.grad." + std::to_string(step_set);
}

std::vector<Request> requests_of(const std::vector<std::string>& names) {
  std::vector<Request> out(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    out[i].name = names[i];
    out[i].type = CollectiveType::kAllreduce;
    out[i].dtype = DataType::kFloat32;
    out[i].shape = {static_cast<int64_t>(i + 1)};
  }
  return out;
}

// Rounds until every name of `names` was agreed; the agreed names, in agreement order.
StatusOr<std::vector<std::string>> agree_all(Controller& c, const std::vector<std::string>& names,
                                             bool recycle) {
  std::vector<Request> requests = requests_of(names);
  std::vector<Request*> fresh;
  for (Request& r : requests) fresh.push_back(&r);
  std::vector<std::string> agreed;
  for (int round = 0; round < 50 && agreed.size() < names.size(); ++round) {
    StatusOr<ResponseList> list = c.round(fresh, {});
    if (!list.ok()) return list.status();
    fresh.clear();
    for (const Response& r : list->responses) {
      if (r.is_error()) return Status::internal("error response for " + r.name + ": " + r.error);
      agreed.push_back(r.name);
    }
    if (recycle) c.recycle(*list);
  }
  return agreed;
}

class ControllerNames : public ::testing::TestWithParam<int> {};

TEST_P(ControllerNames, AreTheRequestsNamesThroughTheCacheWithAndWithoutRecycling) {
  const int n = GetParam();
  Status s = test_support::run_ranks(n, [](collectives::Communicator& comm) -> Status {
    ControllerOptions options;
    options.timeout_s = 60;
    for (bool recycle : {true, false}) {
      Controller c(comm, options);
      // Two sets of names, alternating, then a set of short ones: the first sight of each
      // set goes to the coordinator, its repeats are cache hits.
      std::vector<std::vector<std::string>> sets(3);
      for (int i = 0; i < 40; ++i) {
        sets[0].push_back(long_name(0, i));
        sets[1].push_back(long_name(1, 39 - i));
        if (i < 10) sets[2].push_back("s" + std::to_string(i));
      }
      for (int step : {0, 1, 0, 1, 0, 2, 1, 2, 0}) {
        StatusOr<std::vector<std::string>> agreed = agree_all(c, sets[step], recycle);
        if (!agreed.ok()) return agreed.status();
        std::vector<std::string> got = *agreed, want = sets[step];
        std::sort(got.begin(), got.end());
        std::sort(want.begin(), want.end());
        if (got != want)
          return Status::internal("step of set " + std::to_string(step) + " agreed " +
                                  std::to_string(got.size()) + " names, not its own " +
                                  std::to_string(want.size()) +
                                  (got.empty() ? std::string() : "; first: " + got.front()));
      }
      if (c.stats().cache_hits == 0)
        return Status::internal("no cache hit: the test proves nothing");
    }
    return Status::OK();
  });
  EXPECT_TRUE(s.ok()) << s.to_string();
}

INSTANTIATE_TEST_SUITE_P(Ranks, ControllerNames, ::testing::Values(1, 2, 3));

// What one step's single round returned.
struct StepList {
  uint64_t id = 0;
  bool repeated = false;
};

// One step: every name of `names` enqueued at once, each request in its own entry of `entries`
// (fresh each step), agreed in one round (every rank holds all of them); the list's responses
// must be the requests' names with their own entries, in order.
StatusOr<StepList> one_step(Controller& c, const std::vector<std::string>& names, bool recycle) {
  std::vector<Entry> entries(names.size());
  std::vector<Request> requests = requests_of(names);
  std::vector<Request*> fresh;
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].local_entry = &entries[i];
    fresh.push_back(&requests[i]);
  }
  StatusOr<ResponseList> list = c.round(fresh, {});
  if (!list.ok()) return list.status();
  if (list->responses.size() != names.size())
    return Status::internal("a step of " + std::to_string(names.size()) + " names agreed " +
                            std::to_string(list->responses.size()) + " in its round");
  for (size_t i = 0; i < names.size(); ++i) {
    const Response& r = list->responses[i];
    // The coordinator's responses carry no entry (the executor looks them up by name).
    const Entry* want = list->cached_id != 0 ? &entries[i] : nullptr;
    if (r.name != names[i] || r.shape != requests[i].shape || r.local_entry != want)
      return Status::internal("response " + std::to_string(i) + " is '" + r.name +
                              "' with another entry or shape, not '" + names[i] + "'s");
  }
  StepList out{list->cached_id, list->repeated};
  if (list->repeated && list->cached_id == 0)
    return Status::internal("a repeated list without an id");
  if (recycle) c.recycle(*list);
  return out;
}

class ControllerRepeats : public ::testing::TestWithParam<int> {};

TEST_P(ControllerRepeats, AStepAgreeingAKeptListsPositionsIsThatListWithItsOwnEntries) {
  const int n = GetParam();
  Status s = test_support::run_ranks(n, [](collectives::Communicator& comm) -> Status {
    ControllerOptions options;
    options.timeout_s = 60;
    Controller c(comm, options);
    std::vector<std::string> grads, metrics, other;
    for (int i = 0; i < 30; ++i) grads.push_back(long_name(0, i));
    for (int i = 0; i < 2; ++i) metrics.push_back("metric." + std::to_string(i));
    other.push_back("a.new.name");
    struct Want {
      const std::vector<std::string>* names;
      bool recycle;
      bool has_id;    // made of cache hits alone
      bool repeated;  // of the list with the id noted under `same_as`
      int same_as;    // index of the step whose id it has (-1: a new one)
    };
    const std::vector<Want> steps = {
        {&grads, true, false, false, -1},    // 0: the coordinator's
        {&grads, true, true, false, -1},     // 1: cache hits, copied: kept
        {&grads, true, true, true, 1},       // 2: step 1's list again
        {&metrics, true, false, false, -1},  // 3: new names enter the cache
        {&metrics, true, true, false, -1},   // 4: kept beside step 1's
        {&grads, true, true, false, -1},     // 5: the cache changed since step 1: read again
        {&metrics, true, true, true, 4},     // 6: two kept lists, alternating
        {&grads, true, true, true, 5},       // 7
        {&metrics, true, true, true, 4},     // 8
        {&other, true, false, false, -1},    // 9: a new name again
        {&grads, true, true, false, -1},     // 10
        {&grads, false, true, true, 10},     // 11: repeated, not handed back
        {&grads, true, true, false, -1},     // 12: so read again
        {&grads, true, true, true, 12},      // 13
    };
    std::vector<StepList> got;
    for (size_t i = 0; i < steps.size(); ++i) {
      const Want& w = steps[i];
      StatusOr<StepList> step = one_step(c, *w.names, w.recycle);
      if (!step.ok())
        return Status(step.status().code(),
                      "step " + std::to_string(i) + ": " + step.status().message());
      const StepList& g = *step;
      const bool id_ok = !w.has_id        ? g.id == 0
                         : w.same_as >= 0 ? g.id == got[static_cast<size_t>(w.same_as)].id
                                          : g.id != 0 && (i == 0 || g.id != got.back().id);
      if (!id_ok || g.repeated != w.repeated)
        return Status::internal("step " + std::to_string(i) + ": list id " + std::to_string(g.id) +
                                ", repeated " + std::to_string(g.repeated));
      got.push_back(g);
    }
    if (c.stats().repeats != 6)
      return Status::internal(std::to_string(c.stats().repeats) + " repeats counted, not 6");
    return Status::OK();
  });
  EXPECT_TRUE(s.ok()) << s.to_string();
}

INSTANTIATE_TEST_SUITE_P(Ranks, ControllerRepeats, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace engine
}  // namespace hora
