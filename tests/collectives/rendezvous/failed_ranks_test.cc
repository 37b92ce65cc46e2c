// Tests of FailedRanks (collectives/failed_ranks.h): recording, the error a later wait gets,
// publication through the store to another process's registry, the timeout rule, process-set
// rank mapping and a new generation. Two registries over one MemoryStore stand for two
// processes of a job.
#include "collectives/failed_ranks.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "collectives/rendezvous/memory_store.h"

namespace hora {
namespace collectives {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(FailedRanks, EmptyKnowsNothing) {
  FailedRanks failed;
  failed.begin(0, nullptr, "p/", 0, 3);
  EXPECT_FALSE(failed.any());
  EXPECT_FALSE(failed.contains(1));
  EXPECT_TRUE(failed.failure_of(1).ok());
  EXPECT_TRUE(failed.ranks().empty());
  EXPECT_TRUE(failed.first_failure().ok());
  EXPECT_TRUE(failed.check_wait({}, 1, seconds(5)).ok());
}

TEST(FailedRanks, LaterWaitsGetTheFirstErrorNamingTheRank) {
  FailedRanks failed;
  failed.begin(0, nullptr, "p/", 0, 100);
  EXPECT_TRUE(failed.record(70, Status::timeout("rank 0 timed out waiting for rank 70")));
  EXPECT_TRUE(failed.record(2, Status::remote("rank 2 (pid 9) died")));
  EXPECT_FALSE(failed.record(2, Status::remote("second report")));  // the first one stays
  EXPECT_FALSE(failed.record(0, Status::remote("self")));           // never this rank
  EXPECT_FALSE(failed.record(100, Status::remote("out of range")));
  EXPECT_TRUE(failed.any());
  EXPECT_TRUE(failed.contains(70));
  EXPECT_TRUE(failed.contains(2));
  EXPECT_FALSE(failed.contains(1));
  EXPECT_EQ(failed.ranks(), (std::vector<int>{2, 70}));
  Status s = failed.failure_of(2);
  EXPECT_EQ(s.code(), StatusCode::kRemote);
  EXPECT_NE(s.message().find("stopped waiting for rank 2"), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find("rank 2 (pid 9) died"), std::string::npos) << s.to_string();
  EXPECT_EQ(failed.failure_of(70).code(), StatusCode::kTimeout);
  EXPECT_EQ(failed.first_failure().code(), StatusCode::kTimeout);
}

// Two processes of a 3-rank job over one store: rank 0 found rank 1 stopped; rank 2 did not.
class FailedRanksTwoProcesses : public testing::Test {
 protected:
  void SetUp() override {
    finder.begin(4, &store, "hora/failed/4/", 0, 3);
    other.begin(4, &store, "hora/failed/4/", 2, 3);
    ASSERT_TRUE(finder.record(1, Status::timeout("rank 0 timed out waiting for rank 1")));
  }
  MemoryStore store;
  FailedRanks finder, other;
};

TEST_F(FailedRanksTwoProcesses, TheOtherLearnsItFromTheStoreOnlyOnceItsWaitIsLong) {
  EXPECT_TRUE(store.check({"hora/failed/4/dead/1"}).value());
  // A short wait costs no store request.
  EXPECT_FALSE(other.poll_store(milliseconds(500)));
  EXPECT_TRUE(other.check_wait({}, 1, milliseconds(500)).ok());
  // A long one reads the post and fails at once, naming the rank and the finder's error.
  Status s = other.check_wait({}, 1, seconds(2));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("stopped waiting for rank 1"), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find("rank 0 timed out waiting for rank 1"), std::string::npos)
      << s.to_string();
  EXPECT_EQ(other.ranks(), (std::vector<int>{1}));
  // After end() nothing more goes to the store.
  finder.end();
  EXPECT_TRUE(finder.record(2, Status::remote("rank 2 died")));
  EXPECT_FALSE(store.check({"hora/failed/4/dead/2"}).value());
}

// Rank 0 leaves on purpose (an elastic reset): rank 2's long wait on it ends at once, but rank 0
// is not among the culprits rank 2 reports; rank 1, found stopped, is.
TEST_F(FailedRanksTwoProcesses, ARankThatLeftEndsWaitsButIsNoCulprit) {
  finder.announce_leaving("Remote: rank 1 stopped");
  Status s = other.check_wait({}, 0, seconds(2));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rank 0 left the generation"), std::string::npos) << s.to_string();
  EXPECT_EQ(other.ranks(), (std::vector<int>{0, 1}));
  EXPECT_EQ(other.culprits(), (std::vector<int>{1}));
}

TEST_F(FailedRanksTwoProcesses, TimeoutBlamesNoSecondRank) {
  // Rank 2 timed out on rank 0, which was only waiting on rank 1 itself: rank 1's post is
  // read first, and rank 0 is not blamed.
  EXPECT_FALSE(other.record_timeout(0, Status::timeout("rank 2 timed out waiting for rank 0")));
  EXPECT_FALSE(other.contains(0));
  EXPECT_TRUE(other.contains(1));
  // With nothing known, the timeout's peer is recorded.
  FailedRanks fresh;
  fresh.begin(1, &store, "g/", 2, 3);
  EXPECT_TRUE(fresh.record_timeout(0, Status::timeout("rank 2 timed out waiting for rank 0")));
}

TEST(FailedRanks, ProcessSetRanksMapToGlobalRanks) {
  FailedRanks failed;
  failed.begin(0, nullptr, "p/", 3, 8);
  const std::vector<int> members{3, 5, 7};
  EXPECT_EQ(FailedRanks::global_rank(members, 1), 5);
  EXPECT_EQ(FailedRanks::global_rank({}, 1), 1);
  EXPECT_EQ(FailedRanks::global_rank(members, 3), -1);
  EXPECT_TRUE(failed.record_member(members, 2, Status::remote("rank 7 died")));
  EXPECT_TRUE(failed.contains(7));
  EXPECT_TRUE(failed.check_wait(members, 1, milliseconds(0)).ok());
  EXPECT_FALSE(failed.check_wait(members, 2, milliseconds(0)).ok());
  EXPECT_FALSE(failed.check_collective(members, 3, 0, milliseconds(0)).ok());
  EXPECT_TRUE(failed.check_collective({3, 5}, 2, 0, milliseconds(0)).ok());
}

TEST(FailedRanks, NewGenerationStartsClean) {
  FailedRanks failed;
  failed.begin(0, nullptr, "p/", 0, 3);
  ASSERT_TRUE(failed.record(1, Status::remote("rank 1 died")));
  failed.begin(1, nullptr, "p/", 0, 2);
  EXPECT_EQ(failed.generation(), 1);
  EXPECT_FALSE(failed.any());
  EXPECT_FALSE(failed.contains(1));
  EXPECT_TRUE(failed.ranks().empty());
}

}  // namespace
}  // namespace collectives
}  // namespace hora
