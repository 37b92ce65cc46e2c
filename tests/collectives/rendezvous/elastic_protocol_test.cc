// Tests of the elastic protocol's text forms and waits (collectives/rendezvous/elastic_protocol.h)
// over a MemoryStore: a driver thread publishes generations while a worker waits.
#include "collectives/rendezvous/elastic_protocol.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "collectives/rendezvous/memory_store.h"

namespace hora {
namespace collectives {
namespace elastic {
namespace {

using std::chrono::milliseconds;

Assignment make_assignment(int64_t generation, const std::vector<int64_t>& workers) {
  Assignment a;
  a.generation = generation;
  for (size_t i = 0; i < workers.size(); ++i) {
    WorkerSlot slot;
    slot.worker_id = workers[i];
    slot.rank = static_cast<int>(i);
    slot.local_rank = static_cast<int>(i);
    slot.local_size = static_cast<int>(workers.size());
    slot.host = "node-a";
    a.workers.push_back(slot);
  }
  return a;
}

TEST(ElasticProtocolTest, AssignmentRoundTrips) {
  const Assignment a = make_assignment(3, {7, 2, 9});
  auto parsed = parse_assignment(format_assignment(a));
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->generation, 3);
  ASSERT_EQ(parsed->size(), 3);
  EXPECT_EQ(parsed->workers[1].worker_id, 2);
  EXPECT_EQ(parsed->workers[2].local_size, 3);
  EXPECT_EQ(parsed->workers[0].host, "node-a");
  ASSERT_NE(parsed->find(9), nullptr);
  EXPECT_EQ(parsed->find(9)->rank, 2);
  EXPECT_EQ(parsed->find(4), nullptr);
}

TEST(ElasticProtocolTest, BadAssignmentsNameTheField) {
  const std::string wrong_order =
      "generation=1 size=2\nworker=1 rank=1 local_rank=0 local_size=1 cross_rank=0 "
      "cross_size=1 host=a\nworker=2 rank=0 local_rank=0 local_size=1 cross_rank=0 "
      "cross_size=1 host=a\n";
  auto parsed = parse_assignment(Bytes(wrong_order.begin(), wrong_order.end()));
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("has rank 1 at position 0"), std::string::npos);
  const std::string bad_number = "generation=x size=1\n";
  parsed = parse_assignment(Bytes(bad_number.begin(), bad_number.end()));
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("'generation' is 'x'"), std::string::npos);
  const std::string short_list =
      "generation=0 size=2\nworker=1 rank=0 local_rank=0 local_size=1 cross_rank=0 "
      "cross_size=1 host=a\n";
  parsed = parse_assignment(Bytes(short_list.begin(), short_list.end()));
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("size 2 but lists 1"), std::string::npos);
}

TEST(ElasticProtocolTest, ResetReportRoundTrips) {
  ResetReport report;
  report.failed_ranks = {1, 4};
  report.reason = "rank 1 died\nwhile reducing 'w'";
  auto parsed = parse_reset_report(format_reset_report(report));
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_FALSE(parsed->hosts_updated);
  EXPECT_EQ(parsed->failed_ranks, (std::vector<int>{1, 4}));
  EXPECT_EQ(parsed->reason, "rank 1 died while reducing 'w'");
  report = ResetReport{};
  report.hosts_updated = true;
  parsed = parse_reset_report(format_reset_report(report));
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(parsed->hosts_updated);
  EXPECT_TRUE(parsed->failed_ranks.empty());
}

TEST(ElasticProtocolTest, NewWorkerWaitsUntilAGenerationListsIt) {
  MemoryStore store;
  ASSERT_TRUE(publish_assignment(store, make_assignment(0, {0, 1})).ok());
  std::thread driver([&store] {
    std::this_thread::sleep_for(milliseconds(50));
    ASSERT_TRUE(publish_assignment(store, make_assignment(1, {0, 1, 5})).ok());
  });
  auto got = wait_for_assignment(store, 5, -1, Deadline::after(milliseconds(10000)));
  driver.join();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(got->generation, 1);
  EXPECT_EQ(got->find(5)->rank, 2);
}

TEST(ElasticProtocolTest, ResettingWorkerSkipsToTheNewestGeneration) {
  MemoryStore store;
  ASSERT_TRUE(publish_assignment(store, make_assignment(1, {0, 1, 2})).ok());
  ASSERT_TRUE(publish_assignment(store, make_assignment(2, {0, 2})).ok());
  auto got = wait_for_assignment(store, 2, 0, Deadline::after(milliseconds(5000)));
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(got->generation, 2);
  EXPECT_EQ(got->find(2)->rank, 1);
}

TEST(ElasticProtocolTest, RemovedWorkerAndAbortAndTimeoutAreErrors) {
  MemoryStore store;
  ASSERT_TRUE(publish_assignment(store, make_assignment(1, {0, 2})).ok());
  auto removed = wait_for_assignment(store, 1, 0, Deadline::after(milliseconds(5000)));
  ASSERT_FALSE(removed.ok());
  EXPECT_EQ(removed.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(removed.status().message().find("removed from the job by generation 1"),
            std::string::npos);

  auto timed_out = wait_for_assignment(store, 0, 1, Deadline::after(milliseconds(100)));
  ASSERT_FALSE(timed_out.ok());
  EXPECT_EQ(timed_out.status().code(), StatusCode::kTimeout);

  ASSERT_TRUE(store.set(abort_key(), Bytes{'b', 'y', 'e'}).ok());
  auto aborted = wait_for_assignment(store, 0, 1, Deadline::after(milliseconds(5000)));
  ASSERT_FALSE(aborted.ok());
  EXPECT_NE(aborted.status().message().find("horarun ended the elastic job: bye"),
            std::string::npos);
}

}  // namespace
}  // namespace elastic
}  // namespace collectives
}  // namespace hora
