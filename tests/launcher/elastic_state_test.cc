// Unit tests of ElasticState, the elastic driver's decisions: fed events, checked actions; no
// processes, store or clock.
#include "launcher/elastic_state.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

namespace hora {
namespace launcher {
namespace {

ElasticState make_state(ElasticConfig c,
                        std::optional<std::pair<double, double>> cooldown = std::nullopt) {
  return ElasticState(c, Blacklist(cooldown, [] { return 0.0; }));
}

std::vector<int64_t> ids_of(const collectives::elastic::Assignment& a) {
  std::vector<int64_t> ids;
  for (const auto& s : a.workers) ids.push_back(s.worker_id);
  return ids;
}

bool mentions(const ElasticActions& a, const std::string& text) {
  for (const std::string& n : a.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

// Worker 1 of generation 0 exits 1 at t=1 and workers 0 and 2 report; returns what the last
// report brought.
ElasticActions fail_worker_one(ElasticState& s) {
  s.on_exit(1, 1, 0, 1);
  s.on_report(0, {}, 1);
  return s.on_report(2, {}, 1);
}

ElasticConfig three_of(int min_np) {
  ElasticConfig c;
  c.np = 3;
  c.min_np = min_np;
  c.fallback_s = 10;
  c.timeout_s = 5;
  return c;
}

// Three workers on `hosts` that discovery offered, --min-np `min_np`.
ElasticState discovering_three(int min_np, const std::vector<HostSlots>& hosts) {
  ElasticConfig c = three_of(min_np);
  c.discovery = true;
  ElasticState s = make_state(c);
  s.start({}, 0);
  s.on_hosts(hosts, 0);
  return s;
}

TEST(ElasticState, StartsNpWorkersAndPublishesGenerationZero) {
  ElasticState s = make_state(three_of(2));
  ElasticActions a = s.start({{"localhost", 3}}, 0);
  ASSERT_EQ(a.spawn.size(), 3u);
  EXPECT_EQ(a.spawn[2].worker_id, 2);
  ASSERT_TRUE(a.publish);
  EXPECT_EQ(a.publish->generation, 0);
  EXPECT_EQ(ids_of(*a.publish), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(a.publish->workers[2].local_rank, 2);
  EXPECT_EQ(a.publish->workers[2].local_size, 3);
  EXPECT_EQ(s.awaited(), (std::vector<int64_t>{0, 1, 2}));
}

TEST(ElasticState, FailureThenReportsOfSurvivorsPublishNextGeneration) {
  ElasticState s = make_state(three_of(2));
  s.start({{"localhost", 3}}, 0);
  ElasticActions a = s.on_exit(1, 1, 0, 1.0);
  EXPECT_FALSE(a.publish);
  EXPECT_TRUE(mentions(a, "worker 1 (host localhost, rank 1 of generation 0) exited with code 1"));
  EXPECT_TRUE(mentions(a, "blacklisted for the rest of the job"));
  EXPECT_FALSE(s.on_report(0, {}, 1.1).publish);
  a = s.on_report(2, {}, 1.2);
  ASSERT_TRUE(a.publish);
  EXPECT_EQ(a.publish->generation, 1);
  EXPECT_EQ(ids_of(*a.publish), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(a.publish->workers[1].rank, 1);
  EXPECT_TRUE(a.spawn.empty());  // localhost is blacklisted: no replacement
  // Everyone of generation 1 exits 0: the job is over.
  EXPECT_FALSE(s.on_exit(0, 0, 0, 2).finish);
  a = s.on_exit(2, 0, 0, 2);
  ASSERT_TRUE(a.finish);
  EXPECT_EQ(*a.finish, 0);
}

TEST(ElasticState, ReportNamingAStoppedWorkerKillsIt) {
  ElasticState s = make_state(three_of(2));
  s.start({{"localhost", 3}}, 0);
  collectives::elastic::ResetReport report;
  report.failed_ranks = {2};
  ElasticActions a = s.on_report(0, report, 1);
  EXPECT_EQ(a.kill, (std::vector<int64_t>{2}));
  EXPECT_FALSE(a.publish);
  a = s.on_report(1, report, 1.5);
  EXPECT_TRUE(a.kill.empty());  // killed once
  ASSERT_TRUE(a.publish);
  EXPECT_EQ(ids_of(*a.publish), (std::vector<int64_t>{0, 1}));
  // Its exit, when it comes, changes nothing.
  a = s.on_exit(2, 0, 9, 2);
  EXPECT_TRUE(a.notes.empty() && !a.publish && !a.finish);
}

TEST(ElasticState, ReportNamingAWorkerThatReportedDoesNotKillIt) {
  ElasticState s = make_state(three_of(2));
  s.start({{"localhost", 3}}, 0);
  s.on_report(1, {}, 1);
  collectives::elastic::ResetReport report;
  report.failed_ranks = {1};
  EXPECT_TRUE(s.on_report(0, report, 1).kill.empty());
}

// Reports read in one poll count together: worker 0 names rank 1, which left on purpose (its
// own report is in the same poll, after worker 0's in id order): nobody is killed.
TEST(ElasticState, ReportsReadTogetherNeverKillAWorkerThatReported) {
  ElasticState s = make_state(three_of(2));
  s.start({{"localhost", 3}}, 0);
  s.on_exit(2, 0, 9, 1);
  collectives::elastic::ResetReport names_one;
  names_one.failed_ranks = {1, 2};
  ElasticActions a = s.on_reports({{0, names_one}, {1, {}}}, 1);
  EXPECT_TRUE(a.kill.empty());
  ASSERT_TRUE(a.publish);
  EXPECT_EQ(ids_of(*a.publish), (std::vector<int64_t>{0, 1}));
}

TEST(ElasticState, SilentWorkerIsKilledAfterTheFallbackWindow) {
  ElasticState s = make_state(three_of(2));
  s.start({{"localhost", 3}}, 0);
  s.on_report(0, {}, 100);
  s.on_report(1, {}, 101);
  EXPECT_TRUE(s.on_tick(109.9).kill.empty());
  ElasticActions a = s.on_tick(110);
  EXPECT_EQ(a.kill, (std::vector<int64_t>{2}));
  EXPECT_TRUE(mentions(a, "did not report within 10 s"));
  ASSERT_TRUE(a.publish);
  EXPECT_EQ(ids_of(*a.publish), (std::vector<int64_t>{0, 1}));
}

TEST(ElasticState, FailureAfterOthersFinishedEndsWithItsStatus) {
  ElasticState s = make_state(three_of(1));
  s.start({{"localhost", 3}}, 0);
  s.on_exit(0, 0, 0, 1);
  s.on_exit(1, 0, 0, 1);
  ElasticActions a = s.on_exit(2, 0, 9, 1);
  ASSERT_TRUE(a.finish);
  EXPECT_EQ(*a.finish, 128 + 9);
}

TEST(ElasticState, AWorkerThatFinishedEndsTheJobForThoseWaiting) {
  ElasticState s = make_state(three_of(1));
  s.start({{"localhost", 3}}, 0);
  s.on_exit(2, 0, 0, 1);
  s.on_report(0, {}, 1);
  ElasticActions a = s.on_report(1, {}, 1);
  EXPECT_FALSE(a.publish);
  ASSERT_TRUE(a.finish);
  EXPECT_EQ(*a.finish, 0);
  EXPECT_TRUE(mentions(a, "exited 0: the job is complete, ending the 2 worker(s)"));
}

TEST(ElasticState, AddedSlotsSetHostsUpdatedThenNewWorkersJoin) {
  ElasticConfig c = three_of(2);
  c.np = 2;
  c.max_np = 3;
  c.discovery = true;
  ElasticState s = make_state(c);
  ElasticActions a = s.start({}, 0);
  EXPECT_FALSE(a.publish);  // waiting for discovery
  a = s.on_hosts({{"a", 2}}, 0.5);
  ASSERT_TRUE(a.publish);
  EXPECT_FALSE(a.hosts_updated);
  a = s.on_hosts({{"a", 2}, {"b", 4}}, 1);
  ASSERT_TRUE(a.hosts_updated);
  EXPECT_EQ(*a.hosts_updated, 0);
  EXPECT_FALSE(s.on_hosts({{"a", 2}, {"b", 4}}, 2).hosts_updated);  // once per generation
  collectives::elastic::ResetReport updated;
  updated.hosts_updated = true;
  s.on_report(1, updated, 3);
  a = s.on_report(0, updated, 3);
  ASSERT_EQ(a.spawn.size(), 1u);  // up to --max-np 3
  EXPECT_EQ(a.spawn[0].worker_id, 2);
  EXPECT_EQ(a.spawn[0].host, "b");
  ASSERT_TRUE(a.publish);
  EXPECT_EQ(ids_of(*a.publish), (std::vector<int64_t>{0, 1, 2}));
  const auto& w = a.publish->workers;
  EXPECT_EQ(w[2].local_rank, 0);
  EXPECT_EQ(w[2].cross_rank, 1);
  EXPECT_EQ(w[2].cross_size, 2);
  EXPECT_EQ(w[1].cross_size, 1);
  EXPECT_FALSE(s.on_tick(4).hosts_updated);  // at --max-np
}

TEST(ElasticState, RemovedHostEndsItsWorkersWithoutBlacklisting) {
  ElasticState s = discovering_three(1, {{"a", 2}, {"b", 1}});
  ElasticActions a = s.on_hosts({{"a", 2}}, 1);
  EXPECT_EQ(a.kill, (std::vector<int64_t>{2}));
  EXPECT_FALSE(mentions(a, "blacklisted"));
  s.on_report(0, {}, 2);
  a = s.on_report(1, {}, 2);
  ASSERT_TRUE(a.publish);
  EXPECT_EQ(ids_of(*a.publish), (std::vector<int64_t>{0, 1}));
  // b comes back: not blacklisted, so it is offered again.
  a = s.on_hosts({{"a", 2}, {"b", 1}}, 3);
  EXPECT_TRUE(a.hosts_updated);
}

TEST(ElasticState, BelowMinNpWaitsForDiscoveryThenAborts) {
  ElasticState s = discovering_three(3, {{"localhost", 3}});
  ElasticActions a = fail_worker_one(s);
  EXPECT_FALSE(a.publish);
  EXPECT_FALSE(a.abort);
  EXPECT_TRUE(mentions(a, "waiting up to 5 s"));
  EXPECT_FALSE(s.on_tick(5.9).abort);
  a = s.on_tick(6);
  ASSERT_TRUE(a.abort);
  EXPECT_NE(a.abort->find("below --min-np 3"), std::string::npos) << *a.abort;
  EXPECT_NE(a.abort->find("discovery offers localhost:3"), std::string::npos) << *a.abort;
  EXPECT_TRUE(s.over());
}

TEST(ElasticState, BelowMinNpRecoversWhenDiscoveryOffersAHost) {
  ElasticState s = discovering_three(3, {{"a", 3}});
  fail_worker_one(s);
  ElasticActions a = s.on_hosts({{"a", 3}, {"b", 1}}, 2);
  ASSERT_TRUE(a.publish);
  EXPECT_EQ(ids_of(*a.publish), (std::vector<int64_t>{0, 2, 3}));
}

TEST(ElasticState, BelowMinNpWithFixedHostsAbortsAtOnce) {
  ElasticState s = make_state(three_of(3));
  s.start({{"localhost", 3}}, 0);
  ElasticActions a = fail_worker_one(s);
  ASSERT_TRUE(a.abort);
  EXPECT_NE(a.abort->find("below --min-np 3"), std::string::npos) << *a.abort;
}

TEST(ElasticState, CooldownBringsAFailedHostBack) {
  ElasticConfig c = three_of(3);
  ElasticState s = make_state(c, std::make_pair(2.0, 10.0));
  s.start({{"localhost", 3}}, 0);
  ElasticActions a = s.on_exit(1, 1, 0, 1);
  EXPECT_TRUE(mentions(a, "blacklisted for 2 s"));
  s.on_report(0, {}, 1);
  EXPECT_FALSE(s.on_report(2, {}, 1).abort);  // a host comes back: wait
  a = s.on_tick(3);
  ASSERT_TRUE(a.publish);
  EXPECT_EQ(ids_of(*a.publish), (std::vector<int64_t>{0, 2, 3}));
}

TEST(ElasticState, ResetLimitAborts) {
  ElasticConfig c = three_of(1);
  c.reset_limit = 1;
  ElasticState s = make_state(c);
  s.start({{"localhost", 3}}, 0);
  ASSERT_TRUE(fail_worker_one(s).publish);  // reset 1 of 1
  s.on_exit(2, 1, 0, 2);
  ElasticActions a = s.on_report(0, {}, 2);
  ASSERT_TRUE(a.abort);
  EXPECT_NE(a.abort->find("--reset-limit 1"), std::string::npos) << *a.abort;
}

TEST(ElasticState, PersistentDiscoveryFailureAborts) {
  ElasticState s = discovering_three(1, {{"a", 3}});
  ElasticActions a = s.on_discovery_failed("failed (exit code 3)", 1);
  EXPECT_TRUE(mentions(a, "failed (exit code 3)"));
  EXPECT_FALSE(a.abort);
  EXPECT_FALSE(s.on_discovery_failed("failed (exit code 3)", 5).abort);
  s.on_hosts({{"a", 3}}, 5.5);  // a success restarts the count
  s.on_discovery_failed("failed (exit code 3)", 6);
  EXPECT_FALSE(s.on_discovery_failed("failed (exit code 3)", 10).abort);
  a = s.on_discovery_failed("failed (exit code 3)", 11);
  ASSERT_TRUE(a.abort);
  EXPECT_NE(a.abort->find("has failed for 5 s"), std::string::npos) << *a.abort;
}

TEST(MakeAssignment, LocalAndCrossRanksFollowHorovod) {
  auto a = make_assignment(4, {7, 3, 9, 5}, {"a", "b", "a", "b"});
  EXPECT_EQ(a.generation, 4);
  EXPECT_EQ(a.workers[2].local_rank, 1);
  EXPECT_EQ(a.workers[2].local_size, 2);
  EXPECT_EQ(a.workers[3].cross_rank, 1);
  EXPECT_EQ(a.workers[3].cross_size, 2);
  auto parsed = collectives::elastic::parse_assignment(collectives::elastic::format_assignment(a));
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
}

}  // namespace
}  // namespace launcher
}  // namespace hora
