// Rank layout reading (core/config.cc read_rank_layout) and validation (core/layout.cc), fed
// through a lookup map: every launcher's variables, precedence, conflicts, incomplete sets.
#include "core/layout.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/config.h"

namespace hora {
namespace {

using Env = std::map<std::string, std::string>;

StatusOr<RankLayout> read(const Env& env) {
  return read_rank_layout([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

void expect_error(const Env& env, const std::string& needle1, const std::string& needle2 = "") {
  auto l = read(env);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(l.status().message().find(needle1), std::string::npos) << l.status().to_string();
  if (!needle2.empty()) {
    EXPECT_NE(l.status().message().find(needle2), std::string::npos) << l.status().to_string();
  }
}

const Env kHorarun = {{"HORA_RANK", "1"},
                      {"HORA_SIZE", "4"},
                      {"HORA_LOCAL_RANK", "1"},
                      {"HORA_LOCAL_SIZE", "2"},
                      {"HORA_CROSS_RANK", "0"},
                      {"HORA_CROSS_SIZE", "2"},
                      {"HORA_HOSTNAME", "node1"},
                      {"HORA_RENDEZVOUS_ADDR", "127.0.0.1"},
                      {"HORA_RENDEZVOUS_PORT", "4242"},
                      {"HORA_SECRET", "s3cret"}};

TEST(RankLayout, NothingSetIsASingleProcess) {
  auto l = read({});
  ASSERT_TRUE(l.ok()) << l.status().to_string();
  EXPECT_EQ(l->source, LayoutSource::kSingle);
  EXPECT_EQ(l->rank, 0);
  EXPECT_EQ(l->size, 1);
  EXPECT_FALSE(l->has_store());
}

TEST(RankLayout, Horarun) {
  auto l = read(kHorarun);
  ASSERT_TRUE(l.ok()) << l.status().to_string();
  EXPECT_EQ(l->source, LayoutSource::kHorarun);
  EXPECT_EQ(l->rank, 1);
  EXPECT_EQ(l->size, 4);
  EXPECT_EQ(l->local_rank, 1);
  EXPECT_EQ(l->local_size, 2);
  EXPECT_EQ(l->cross_rank, 0);
  EXPECT_EQ(l->cross_size, 2);
  EXPECT_EQ(l->hostname, "node1");
  EXPECT_EQ(l->store_addr, "127.0.0.1");
  EXPECT_EQ(l->store_port, 4242);
  EXPECT_EQ(l->secret, "s3cret");
  EXPECT_FALSE(l->hosts_store);
  EXPECT_EQ(l->variables_read.find("s3cret"), std::string::npos) << "the secret must not leak";
}

TEST(RankLayout, HorarunIncompleteOrOutOfRange) {
  expect_error({{"HORA_RANK", "0"}}, "HORA_SIZE is missing", "HORA_RANK=0");
  expect_error({{"HORA_SIZE", "2"}}, "HORA_RANK is missing");
  Env e = kHorarun;
  e["HORA_RANK"] = "4";
  expect_error(e, "rank 4 is not in [0, size 4)", "HORA_RANK=4");
  e = kHorarun;
  e.erase("HORA_LOCAL_SIZE");
  expect_error(e, "HORA_LOCAL_RANK is set but HORA_LOCAL_SIZE is missing");
  e = kHorarun;
  e.erase("HORA_SECRET");
  expect_error(e, "must be set together");
  expect_error({{"HORA_RANK", "0"}, {"HORA_SIZE", "2"}}, "HORA_RENDEZVOUS_ADDR");
  e = kHorarun;
  e["HORA_RANK"] = "one";
  expect_error(e, "HORA_RANK='one'");
  e = kHorarun;
  e["HORA_RENDEZVOUS_PORT"] = "70000";
  expect_error(e, "HORA_RENDEZVOUS_PORT");
}

TEST(RankLayout, HorarunSizeOneNeedsNoStore) {
  auto l = read({{"HORA_RANK", "0"}, {"HORA_SIZE", "1"}});
  ASSERT_TRUE(l.ok()) << l.status().to_string();
  EXPECT_FALSE(l->has_store());
}

TEST(RankLayout, HorarunConflictingWithMpirunNamesBoth) {
  Env e = kHorarun;
  e["HORA_RANK"] = "2";
  e["OMPI_COMM_WORLD_RANK"] = "1";
  e["OMPI_COMM_WORLD_SIZE"] = "4";
  expect_error(e, "disagree", "OMPI_COMM_WORLD_RANK=1");
  // Agreeing values are fine.
  e["OMPI_COMM_WORLD_RANK"] = "2";
  EXPECT_TRUE(read(e).ok());
}

TEST(RankLayout, Mpirun) {
  auto l = read({{"OMPI_COMM_WORLD_RANK", "5"},
                 {"OMPI_COMM_WORLD_SIZE", "8"},
                 {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                 {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  ASSERT_TRUE(l.ok()) << l.status().to_string();
  EXPECT_EQ(l->source, LayoutSource::kMpirun);
  EXPECT_EQ(l->rank, 5);
  EXPECT_EQ(l->local_rank, 1);
  EXPECT_EQ(l->cross_rank, 1);
  EXPECT_EQ(l->cross_size, 2);
  EXPECT_FALSE(l->has_store());  // the MPI backend needs none
  expect_error({{"OMPI_COMM_WORLD_RANK", "0"}}, "OMPI_COMM_WORLD_SIZE is missing");
}

TEST(RankLayout, MpirunWithSelfHostedStore) {
  auto l = read({{"OMPI_COMM_WORLD_RANK", "0"},
                 {"OMPI_COMM_WORLD_SIZE", "2"},
                 {"HORA_RENDEZVOUS_ADDR", "10.0.0.1"},
                 {"HORA_RENDEZVOUS_PORT", "5555"},
                 {"HORA_SECRET", "k"}});
  ASSERT_TRUE(l.ok()) << l.status().to_string();
  EXPECT_TRUE(l->hosts_store);
  EXPECT_EQ(l->store_port, 5555);
  EXPECT_EQ(l->secret, "k");
  EXPECT_FALSE(l->secret_is_fallback);
}

TEST(RankLayout, Slurm) {
  auto l = read({{"SLURM_PROCID", "3"},
                 {"SLURM_NTASKS", "5"},
                 {"SLURM_LOCALID", "0"},
                 {"SLURM_NODEID", "1"},
                 {"SLURM_NNODES", "2"},
                 {"SLURM_TASKS_PER_NODE", "3,2"},
                 {"SLURM_JOB_ID", "77"},
                 {"MASTER_ADDR", "node0"},
                 {"MASTER_PORT", "29500"}});
  ASSERT_TRUE(l.ok()) << l.status().to_string();
  EXPECT_EQ(l->source, LayoutSource::kSlurm);
  EXPECT_EQ(l->rank, 3);
  EXPECT_EQ(l->size, 5);
  EXPECT_EQ(l->local_size, 2);
  EXPECT_EQ(l->cross_rank, 1);
  EXPECT_EQ(l->store_addr, "node0");
  EXPECT_FALSE(l->hosts_store);
  EXPECT_TRUE(l->secret_is_fallback);
  EXPECT_NE(l->secret.find("77"), std::string::npos);
  auto packed = read({{"SLURM_PROCID", "7"},
                      {"SLURM_NTASKS", "8"},
                      {"SLURM_LOCALID", "1"},
                      {"SLURM_NODEID", "3"},
                      {"SLURM_NNODES", "4"},
                      {"SLURM_TASKS_PER_NODE", "2(x4)"}});
  ASSERT_TRUE(packed.ok()) << packed.status().to_string();
  EXPECT_EQ(packed->local_size, 2);
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"}},
               "SLURM_TASKS_PER_NODE");
  // SLURM_PROCID alone (a batch script) is not a task layout.
  EXPECT_EQ(read({{"SLURM_PROCID", "0"}}).value().source, LayoutSource::kSingle);
}

TEST(RankLayout, Torchrun) {
  auto l = read({{"RANK", "0"},
                 {"WORLD_SIZE", "4"},
                 {"LOCAL_RANK", "0"},
                 {"LOCAL_WORLD_SIZE", "2"},
                 {"GROUP_RANK", "0"},
                 {"GROUP_WORLD_SIZE", "2"},
                 {"MASTER_ADDR", "127.0.0.1"},
                 {"MASTER_PORT", "29500"}});
  ASSERT_TRUE(l.ok()) << l.status().to_string();
  EXPECT_EQ(l->source, LayoutSource::kTorchrun);
  EXPECT_TRUE(l->hosts_store);
  EXPECT_EQ(l->store_port, 29500);
  EXPECT_EQ(l->cross_size, 2);
  // Under torchrun's agent store, hora's store takes the next port.
  auto agent = read({{"RANK", "1"},
                     {"WORLD_SIZE", "2"},
                     {"MASTER_ADDR", "127.0.0.1"},
                     {"MASTER_PORT", "29500"},
                     {"TORCHELASTIC_USE_AGENT_STORE", "True"}});
  ASSERT_TRUE(agent.ok()) << agent.status().to_string();
  EXPECT_EQ(agent->store_port, 29501);
  EXPECT_FALSE(agent->hosts_store);
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}}, "MASTER_ADDR and MASTER_PORT are missing");
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "x"}}, "MASTER_PORT");
  expect_error({{"WORLD_SIZE", "2"}}, "RANK is missing");
}

TEST(RankLayout, HorarunWinsOverTorchrunAndSlurm) {
  Env e = kHorarun;
  e["RANK"] = "0";
  e["WORLD_SIZE"] = "1";
  e["SLURM_PROCID"] = "0";
  e["SLURM_NTASKS"] = "1";
  auto l = read(e);
  ASSERT_TRUE(l.ok()) << l.status().to_string();
  EXPECT_EQ(l->source, LayoutSource::kHorarun);
  EXPECT_EQ(l->rank, 1);
}

// The negotiation counts ranks in int64 words (core/engine/round_counts.h): a job larger than
// kMaxRanks is refused at init with the limit named, the largest one is accepted.
TEST(RankLayout, SizeIsBoundedByTheNegotiationsCounting) {
  Env e = kHorarun;
  e["HORA_SIZE"] = std::to_string(kMaxRanks + 1);
  expect_error(e, "HORA_SIZE='" + std::to_string(kMaxRanks + 1) + "' is not valid",
               "[1, " + std::to_string(kMaxRanks) + "]");
  RankLayout l;
  l.size = kMaxRanks + 1;
  Status too_many = validate_layout(l);
  EXPECT_NE(too_many.message().find("exceeds hora's limit of " + std::to_string(kMaxRanks)),
            std::string::npos)
      << too_many.to_string();
  l = RankLayout();
  l.size = kMaxRanks;
  l.rank = kMaxRanks - 1;
  EXPECT_TRUE(validate_layout(l).ok());
}

TEST(RankLayout, ValidateChecksEveryField) {
  RankLayout l;
  EXPECT_TRUE(validate_layout(l).ok());
  l.local_size = 2;
  EXPECT_FALSE(validate_layout(l).ok());
  l = RankLayout();
  l.cross_rank = 1;
  EXPECT_FALSE(validate_layout(l).ok());
  l = RankLayout();
  l.store_addr = "h";
  l.store_port = 1;
  EXPECT_FALSE(validate_layout(l).ok()) << "a store without a secret";
  l.secret = "s";
  EXPECT_TRUE(validate_layout(l).ok());
}

}  // namespace
}  // namespace hora
