// ElasticMember (core/elastic_member.h): an elastic worker's environment, its layout from an
// assignment, and each error of the wait for one, against a real TcpStoreServer.
#include "core/elastic_member.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "collectives/rendezvous/tcp_store_client.h"
#include "collectives/rendezvous/tcp_store_server.h"

namespace hora {
namespace {

namespace ce = collectives::elastic;

class ElasticMemberTest : public ::testing::Test {
 protected:
  void SetUp() override {
    collectives::TcpStoreServer::Options options;
    options.secret = "s3cret";
    server_ = collectives::TcpStoreServer::start(options).value();
    driver_ = collectives::TcpStoreClient::connect("127.0.0.1", server_->port(), "s3cret",
                                                   Deadline::after_seconds(10))
                  .value();
    env_ = {{"HORA_ELASTIC", "1"},
            {"HORA_ELASTIC_WORKER", "7"},
            {"HORA_ELASTIC_TIMEOUT_S", "0.3"},
            {"HORA_HOSTNAME", "hostA"},
            {"HORA_RENDEZVOUS_ADDR", "127.0.0.1"},
            {"HORA_RENDEZVOUS_PORT", std::to_string(server_->port())},
            {"HORA_SECRET", "s3cret"}};
  }

  EnvLookup lookup() const {
    // The copy lives in the returned function: its strings outlive every lookup.
    return [env = env_](const char* name) -> const char* {
      auto it = env.find(name);
      return it == env.end() ? nullptr : it->second.c_str();
    };
  }

  // Generation g listing `workers` (ids in rank order), two per host.
  void publish(int64_t g, const std::vector<int64_t>& workers) {
    ce::Assignment a;
    a.generation = g;
    const int size = static_cast<int>(workers.size());
    for (int r = 0; r < size; ++r) {
      ce::WorkerSlot s;
      s.worker_id = workers[static_cast<size_t>(r)];
      s.rank = r;
      s.local_rank = r % 2;
      s.local_size = r / 2 < size / 2 ? 2 : size % 2 == 0 ? 2 : 1;
      s.cross_rank = r / 2;
      s.cross_size = (size + 1) / 2;
      s.host = "host" + std::to_string(r / 2);
      a.workers.push_back(s);
    }
    ASSERT_TRUE(ce::publish_assignment(*driver_, a).ok());
  }

  std::unique_ptr<collectives::TcpStoreServer> server_;
  std::unique_ptr<collectives::Store> driver_;
  std::map<std::string, std::string> env_;
};

TEST_F(ElasticMemberTest, ElasticModeIsHoraElasticOne) {
  EXPECT_TRUE(elastic_mode(lookup()));
  env_["HORA_ELASTIC"] = "0";
  EXPECT_FALSE(elastic_mode(lookup()));
  env_.erase("HORA_ELASTIC");
  EXPECT_FALSE(elastic_mode(lookup()));
}

TEST_F(ElasticMemberTest, BadEnvironmentNamesTheVariable) {
  env_.erase("HORA_ELASTIC_WORKER");
  auto missing = ElasticMember::connect(lookup(), 5);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("HORA_ELASTIC_WORKER"), std::string::npos);
  env_["HORA_ELASTIC_WORKER"] = "-1";
  EXPECT_NE(ElasticMember::connect(lookup(), 5).status().message().find("HORA_ELASTIC_WORKER"),
            std::string::npos);
  env_["HORA_ELASTIC_WORKER"] = "1";
  env_["HORA_ELASTIC_TIMEOUT_S"] = "soon";
  EXPECT_NE(ElasticMember::connect(lookup(), 5).status().message().find("HORA_ELASTIC_TIMEOUT_S"),
            std::string::npos);
  env_["HORA_ELASTIC_TIMEOUT_S"] = "1";
  env_.erase("HORA_SECRET");
  EXPECT_NE(ElasticMember::connect(lookup(), 5).status().message().find("HORA_SECRET"),
            std::string::npos);
}

TEST_F(ElasticMemberTest, LayoutComesFromTheWorkersSlot) {
  auto member = ElasticMember::connect(lookup(), 5).value();
  EXPECT_EQ(member->worker_id(), 7);
  EXPECT_EQ(member->generation(), -1);
  publish(0, {3, 5, 7});
  auto layout = member->next_layout();
  ASSERT_TRUE(layout.ok()) << layout.status().to_string();
  EXPECT_EQ(member->generation(), 0);
  EXPECT_EQ(layout->rank, 2);
  EXPECT_EQ(layout->size, 3);
  EXPECT_EQ(layout->local_rank, 0);
  EXPECT_EQ(layout->local_size, 1);
  EXPECT_EQ(layout->cross_rank, 1);
  EXPECT_EQ(layout->cross_size, 2);
  EXPECT_EQ(layout->hostname, "hostA");
  EXPECT_EQ(layout->store_port, server_->port());
  EXPECT_FALSE(layout->hosts_store);
  EXPECT_TRUE(validate_layout(*layout).ok());
}

TEST_F(ElasticMemberTest, ResetReportAndHostsFlagAreThisGenerations) {
  auto member = ElasticMember::connect(lookup(), 5).value();
  publish(0, {7, 8});
  ASSERT_TRUE(member->next_layout().ok());
  EXPECT_FALSE(member->hosts_updated_flag().value());
  ASSERT_TRUE(driver_->set(ce::hosts_updated_key(0), {1}).ok());
  EXPECT_TRUE(member->hosts_updated_flag().value());
  ce::ResetReport report;
  report.failed_ranks = {1};
  report.reason = "rank 1 died";
  ASSERT_TRUE(member->post_reset(report).ok());
  auto posted = driver_->get(ce::reset_key(0, 7), Deadline::after_seconds(5));
  ASSERT_TRUE(posted.ok());
  auto parsed = ce::parse_reset_report(posted.value()).value();
  EXPECT_EQ(parsed.failed_ranks, std::vector<int>{1});
  EXPECT_EQ(parsed.reason, "rank 1 died");
  // The next generation: its own flag, not yet set.
  publish(1, {7});
  ASSERT_TRUE(member->next_layout().ok());
  EXPECT_EQ(member->generation(), 1);
  EXPECT_FALSE(member->hosts_updated_flag().value());
}

TEST_F(ElasticMemberTest, EachWaitErrorSaysWhy) {
  auto member = ElasticMember::connect(lookup(), 5).value();
  auto none = member->next_layout();  // HORA_ELASTIC_TIMEOUT_S=0.3, nothing published
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kTimeout);
  EXPECT_NE(none.status().message().find("worker 7"), std::string::npos);
  publish(0, {7, 8});
  ASSERT_TRUE(member->next_layout().ok());
  publish(1, {8});  // worker 7 removed
  auto removed = member->next_layout();
  ASSERT_FALSE(removed.ok());
  EXPECT_EQ(removed.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(removed.status().message().find("removed"), std::string::npos);
  const std::string why = "below --min-np 2";
  ASSERT_TRUE(driver_->set(ce::abort_key(), collectives::Bytes(why.begin(), why.end())).ok());
  auto aborted = member->next_layout();
  ASSERT_FALSE(aborted.ok());
  EXPECT_NE(aborted.status().message().find(why), std::string::npos);
}

}  // namespace
}  // namespace hora
