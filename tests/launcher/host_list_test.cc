#include "launcher/host_list.h"

#include <gtest/gtest.h>

namespace hora {
namespace launcher {
namespace {

TEST(HostList, ParsesHostsAndSlots) {
  auto hosts = parse_host_list("a:2,b,c:16");
  ASSERT_TRUE(hosts.ok()) << hosts.status().to_string();
  ASSERT_EQ(hosts->size(), 3u);
  EXPECT_EQ((*hosts)[0].host, "a");
  EXPECT_EQ((*hosts)[0].slots, 2);
  EXPECT_EQ((*hosts)[1].slots, 1);
  EXPECT_EQ((*hosts)[2].slots, 16);
  EXPECT_EQ(format_host_list(*hosts), "a:2,b:1,c:16");
}

TEST(HostList, RejectsMalformedLists) {
  for (const char* bad :
       {"", "a:0", "a:-1", "a:x", "a:", ":2", "a:2,,b:1", "a:2,", "a:1,a:2", "a:99999999999"}) {
    auto hosts = parse_host_list(bad);
    EXPECT_FALSE(hosts.ok()) << "'" << bad << "' was accepted";
    if (!hosts.ok()) {
      EXPECT_EQ(hosts.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

TEST(HostList, ParsesHostfiles) {
  auto hosts =
      parse_hostfile_text("# cluster\nnode1 slots=4\n\n  node2:2   # second\nnode3\n", "f");
  ASSERT_TRUE(hosts.ok()) << hosts.status().to_string();
  EXPECT_EQ(format_host_list(*hosts), "node1:4,node2:2,node3:1");
  auto bad = parse_hostfile_text("node1 slots=4\nnode2 cpus=2\n", "f");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(parse_hostfile_text("# nothing\n", "f").ok());
  EXPECT_FALSE(parse_hostfile_text("a slots=0\n", "f").ok());
  EXPECT_FALSE(read_hostfile("/nonexistent/hostfile").ok());
}

TEST(HostList, RecognisesThisMachine) {
  EXPECT_TRUE(is_local_host("localhost", "node7.cluster"));
  EXPECT_TRUE(is_local_host("127.0.0.1", "node7.cluster"));
  EXPECT_TRUE(is_local_host("node7.cluster", "node7.cluster"));
  EXPECT_TRUE(is_local_host("node7", "node7.cluster"));
  EXPECT_FALSE(is_local_host("node8", "node7.cluster"));
  EXPECT_FALSE(is_local_host("fakehost1", "node7"));
}

TEST(Layout, DefaultSingleHost) {
  auto ranks = layout_ranks({{"localhost", 4}}, 4, "me");
  ASSERT_TRUE(ranks.ok());
  ASSERT_EQ(ranks->size(), 4u);
  for (int r = 0; r < 4; ++r) {
    const RankPlacement& p = (*ranks)[r];
    EXPECT_EQ(p.rank, r);
    EXPECT_EQ(p.size, 4);
    EXPECT_EQ(p.local_rank, r);
    EXPECT_EQ(p.local_size, 4);
    EXPECT_EQ(p.cross_rank, 0);
    EXPECT_EQ(p.cross_size, 1);
    EXPECT_TRUE(p.is_local);
  }
}

TEST(Layout, FillsHostsInOrderWithHorovodCrossRanks) {
  // a gets 3 ranks, b gets 2, c (slots left over) none.
  auto ranks = layout_ranks({{"a", 3}, {"b", 2}, {"c", 4}}, 5, "me");
  ASSERT_TRUE(ranks.ok());
  ASSERT_EQ(ranks->size(), 5u);
  struct Want {
    const char* host;
    int local_rank, local_size, cross_rank, cross_size;
  };
  const Want want[] = {{"a", 0, 3, 0, 2},
                       {"a", 1, 3, 0, 2},
                       {"a", 2, 3, 0, 1},
                       {"b", 0, 2, 1, 2},
                       {"b", 1, 2, 1, 2}};
  for (int r = 0; r < 5; ++r) {
    const RankPlacement& p = (*ranks)[r];
    EXPECT_EQ(p.host, want[r].host) << r;
    EXPECT_EQ(p.local_rank, want[r].local_rank) << r;
    EXPECT_EQ(p.local_size, want[r].local_size) << r;
    EXPECT_EQ(p.cross_rank, want[r].cross_rank) << r;
    EXPECT_EQ(p.cross_size, want[r].cross_size) << r;
    EXPECT_FALSE(p.is_local);
  }
}

TEST(Layout, UsesOnlyTheHostsItNeeds) {
  auto ranks = layout_ranks({{"localhost", 2}, {"b", 2}}, 2, "me");
  ASSERT_TRUE(ranks.ok());
  EXPECT_EQ((*ranks)[1].host, "localhost");
  EXPECT_EQ((*ranks)[1].cross_size, 1);
  EXPECT_TRUE((*ranks)[1].is_local);
}

TEST(Layout, RejectsTooFewSlotsAndBadCounts) {
  auto too_many = layout_ranks({{"a", 2}, {"b", 2}}, 5, "me");
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().message(), "-np 5 needs 5 slots but the hosts have 4 (a:2,b:2)");
  EXPECT_FALSE(layout_ranks({{"a", 2}}, 0, "me").ok());
  EXPECT_FALSE(layout_ranks({{"a", 2}}, -1, "me").ok());
}

}  // namespace
}  // namespace launcher
}  // namespace hora
