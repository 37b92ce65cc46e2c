// Controller over in-process ranks: the names of a round's responses are the requests' names,
// round after round, whether they went through the coordinator or the cache, and whether the
// engine handed the previous lists back (recycle: the cache hits then copy into the names'
// kept buffers) or not.
#include "core/engine/controller.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

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
    if (!list.is_ok()) return list.status();
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
        if (!agreed.is_ok()) return agreed.status();
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
    return Status::ok();
  });
  EXPECT_TRUE(s.is_ok()) << s.to_string();
}

INSTANTIATE_TEST_SUITE_P(Ranks, ControllerNames, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace engine
}  // namespace hora
