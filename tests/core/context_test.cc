// Context in one process: a single-process job (no store), a job of threads over a real
// TcpStoreServer (horarun-style and rank-0-hosted layouts), the missing-rank timeout and the
// configuration errors init must report.
#include "core/context.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "collectives/rendezvous/tcp_store_server.h"

namespace hora {
namespace {

Config gloo_config(double start_timeout_s = 20) {
  Config c;
  c.backend = BackendKind::kGloo;
  c.start_timeout_s = start_timeout_s;
  c.timeout_s = 20;
  return c;
}

RankLayout horarun_layout(int rank, int size, int port) {
  RankLayout l;
  l.source = LayoutSource::kHorarun;
  l.rank = rank;
  l.size = size;
  l.local_rank = rank;
  l.local_size = size;
  l.store_addr = "127.0.0.1";
  l.store_port = port;
  l.secret = "context-test-secret";
  return l;
}

TEST(Context, SingleProcessNeedsNoStore) {
  auto ctx = Context::create(gloo_config(), RankLayout());
  ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
  auto& comm = ctx.value()->communicator();
  EXPECT_EQ(comm.size(), 1);
  float x[3] = {1, 2, 3};
  ASSERT_TRUE(
      comm.allreduce(x, x, 3, DataType::kFloat32, ReduceOp::kSum, Deadline::after_seconds(5)).ok());
  EXPECT_EQ(x[2], 3.0f);
  EXPECT_TRUE(ctx.value()->shutdown().ok());
  EXPECT_TRUE(ctx.value()->shutdown().ok()) << "shutdown is idempotent";
}

TEST(Context, SeveralRanksWithoutAStoreIsAnError) {
  RankLayout l;
  l.source = LayoutSource::kMpirun;
  l.rank = 0;
  l.size = 2;
  l.local_size = 2;
  auto ctx = Context::create(gloo_config(), l);
  ASSERT_FALSE(ctx.ok());
  EXPECT_EQ(ctx.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ctx.status().message().find("HORA_RENDEZVOUS_ADDR"), std::string::npos)
      << ctx.status().to_string();
}

TEST(Context, BackendNotBuiltNamesHoraBackend) {
  Config c = gloo_config();
  c.backend = BackendKind::kNccl;  // not built (kUnimplemented), or built without a GPU here
  auto ctx = Context::create(c, RankLayout());
  if (ctx.ok()) GTEST_SKIP() << "this process has a GPU: HORA_BACKEND=nccl initialises";
  EXPECT_TRUE(ctx.status().code() == StatusCode::kUnimplemented ||
              ctx.status().code() == StatusCode::kFailedPrecondition)
      << ctx.status().to_string();
  EXPECT_NE(ctx.status().message().find("HORA_BACKEND=nccl"), std::string::npos)
      << ctx.status().to_string();
}

// Runs Context::create on `n` threads; returns each rank's Status after a barrier+shutdown.
std::vector<Status> run_job(int n, const std::function<RankLayout(int)>& layout_of,
                            double start_timeout_s = 20) {
  std::vector<Status> results(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      auto ctx = Context::create(gloo_config(start_timeout_s), layout_of(r), /*generation=*/0);
      if (!ctx.ok()) {
        results[r] = ctx.status();
        return;
      }
      auto& comm = ctx.value()->communicator();
      int32_t v = r;
      Status s =
          comm.allreduce(&v, &v, 1, DataType::kInt32, ReduceOp::kSum, Deadline::after_seconds(20));
      if (s.ok() && v != n * (n - 1) / 2)
        s = Status::internal("allreduce gave " + std::to_string(v));
      Status d = ctx.value()->shutdown();
      results[r] = s.ok() ? d : s;
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

TEST(Context, ThreeRanksOverALauncherHostedStore) {
  collectives::TcpStoreServer::Options options;
  options.secret = "context-test-secret";
  auto server = collectives::TcpStoreServer::start(options);
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  const int port = server.value()->port();
  for (const Status& s : run_job(3, [&](int r) { return horarun_layout(r, 3, port); }))
    EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST(Context, RankZeroHostsTheStoreForTorchrunLayouts) {
  // Find a free port by letting a server pick one, then release it for rank 0 to bind.
  collectives::TcpStoreServer::Options probe;
  probe.secret = "x";
  auto picked = collectives::TcpStoreServer::start(probe);
  ASSERT_TRUE(picked.ok()) << picked.status().to_string();
  const int port = picked.value()->port();
  picked.value()->stop();
  picked.value().reset();
  auto layout_of = [&](int r) {
    RankLayout l = horarun_layout(r, 2, port);
    l.source = LayoutSource::kTorchrun;
    l.hosts_store = r == 0;
    return l;
  };
  for (const Status& s : run_job(2, layout_of)) EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST(Context, MissingRankTimesOutNamingIt) {
  collectives::TcpStoreServer::Options options;
  options.secret = "context-test-secret";
  auto server = collectives::TcpStoreServer::start(options);
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  const auto start = std::chrono::steady_clock::now();
  // Ranks 0 and 2 of 3 start; rank 1 never does.
  std::vector<Status> results(2);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      auto ctx =
          Context::create(gloo_config(0.5), horarun_layout(i * 2, 3, server.value()->port()));
      results[i] = ctx.ok() ? Status::OK() : ctx.status();
    });
  }
  for (auto& t : threads) t.join();
  for (const Status& s : results) {
    EXPECT_EQ(s.code(), StatusCode::kTimeout) << s.to_string();
    EXPECT_NE(s.message().find("never arrived: rank 1 "), std::string::npos) << s.to_string();
    EXPECT_NE(s.message().find("HORA_START_TIMEOUT_S=0.5"), std::string::npos) << s.to_string();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace hora
