// The gloo backend in one process: N threads, one rank each, connected through a MemoryStore.
// Covers point to point (ring exchange, ordering, zero bytes), every native collective
// against the shared correctness checks (tests/support/collective_checks.h), and the error
// paths (bad peer, timeout, abort, a rank that never connects).
#include "collectives/backends/gloo/gloo_communicator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "collectives/backends/registry.h"
#include "collectives/rendezvous/memory_store.h"
#include "tests/support/collective_checks.h"

namespace hora {
namespace collectives {
namespace {

using RankBody = std::function<Status(Communicator&)>;

// Connects n gloo ranks over one store and runs body on each; returns the first failure.
Status run_gloo(int n, const RankBody& body, double timeout_s = 20) {
  MemoryStore store;
  std::vector<Status> results(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      GlooOptions options;
      options.timeout_s = timeout_s;
      auto comm = create_gloo_communicator(r, n, store, options, Deadline::after_seconds(20));
      if (!comm.ok()) {
        results[r] = comm.status();
        return;
      }
      results[r] = body(*comm.value());
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r)
    if (!results[r].ok()) return results[r].with_context(" [rank " + std::to_string(r) + "]");
  return Status::OK();
}

Deadline soon() { return Deadline::after_seconds(20); }

class GlooRanks : public ::testing::TestWithParam<int> {};

TEST_P(GlooRanks, RingExchangeSendRecv) {
  const int n = GetParam();
  ASSERT_TRUE(
      run_gloo(n, [](Communicator& c) -> Status {
        if (c.size() == 1) return Status::OK();
        const int next = (c.rank() + 1) % c.size(), prev = (c.rank() + c.size() - 1) % c.size();
        std::vector<int32_t> out(1000), in(1000, -1);
        for (int i = 0; i < 1000; ++i) out[i] = c.rank() * 100000 + i;
        HORA_ASSIGN_OR_RETURN(auto rq, c.irecv(prev, in.data(), in.size() * 4, 7));
        HORA_ASSIGN_OR_RETURN(auto sq, c.isend(next, out.data(), out.size() * 4, 7));
        HORA_RETURN_IF_ERROR(sq->wait(soon()));
        HORA_RETURN_IF_ERROR(rq->wait(soon()));
        for (int i = 0; i < 1000; ++i)
          if (in[i] != prev * 100000 + i)
            return Status::internal("element " + std::to_string(i) + " = " + std::to_string(in[i]));
        return Status::OK();
      }).to_string() == "OK");
}

TEST_P(GlooRanks, SameTagMessagesArriveInOrderAndZeroBytesWork) {
  const int n = GetParam();
  if (n == 1) GTEST_SKIP() << "point to point needs two ranks";
  Status s = run_gloo(n, [](Communicator& c) -> Status {
    if (c.rank() == 0) {
      for (int peer = 1; peer < c.size(); ++peer) {
        for (uint32_t k = 0; k < 5; ++k) HORA_RETURN_IF_ERROR(c.send(peer, &k, 4, 3, soon()));
        HORA_RETURN_IF_ERROR(c.send(peer, nullptr, 0, 4, soon()));
      }
    } else {
      for (uint32_t k = 0; k < 5; ++k) {
        uint32_t got = 99;
        HORA_RETURN_IF_ERROR(c.recv(0, &got, 4, 3, soon()));
        if (got != k)
          return Status::internal("got " + std::to_string(got) + " for " + std::to_string(k));
      }
      HORA_RETURN_IF_ERROR(c.recv(0, nullptr, 0, 4, soon()));
    }
    return Status::OK();
  });
  EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST_P(GlooRanks, NativeAllreduceMatrix) {
  const int n = GetParam();
  Status s = run_gloo(n, [](Communicator& c) -> Status {
    test_support::AllreduceFn fn = [](Communicator& comm, const void* in, void* out, size_t count,
                                      DataType dtype, ReduceOp op) {
      return comm.allreduce(in, out, count, dtype, op, soon());
    };
    for (DataType dtype :
         {DataType::kFloat32, DataType::kInt32, DataType::kBFloat16, DataType::kFloat16,
          DataType::kUint8, DataType::kFloat64, DataType::kInt16, DataType::kBool}) {
      for (const auto& cs : test_support::allreduce_cases(c.size(), dtype, false))
        HORA_RETURN_IF_ERROR(test_support::check_allreduce(c, fn, cs));
    }
    // Sum on bool is refused before gloo is called, on every rank alike.
    uint8_t flags[2] = {1, 0};
    Status sum = c.allreduce(flags, flags, 2, DataType::kBool, ReduceOp::kSum, soon());
    if (sum.code() != StatusCode::kInvalidArgument ||
        sum.message().find("allreduce op sum is not defined for bool") == std::string::npos)
      return Status::internal("bool sum gave " + sum.to_string());
    return Status::OK();
  });
  EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST_P(GlooRanks, NativeAllgathervBroadcastAlltoallv) {
  const int n = GetParam();
  Status s = run_gloo(n, [](Communicator& c) -> Status {
    test_support::AllgathervFn ag = [](Communicator& comm, const void* in, void* out,
                                       const std::vector<size_t>& counts, DataType dtype) {
      return comm.allgatherv(in, out, counts, dtype, soon());
    };
    test_support::BroadcastFn bc = [](Communicator& comm, const void* in, void* out, size_t count,
                                      DataType dtype, int root) {
      if (in != out && comm.rank() == root) std::memcpy(out, in, count * data_type_bytes(dtype));
      return comm.broadcast(out, count, dtype, root, soon());
    };
    test_support::AlltoallvFn a2a = [](Communicator& comm, const void* in,
                                       const std::vector<size_t>& sc, void* out,
                                       const std::vector<size_t>& rc, DataType dtype) {
      return comm.alltoallv(in, sc, out, rc, dtype, soon());
    };
    const int p = c.size();
    std::vector<std::vector<size_t>> count_sets = {std::vector<size_t>(p, 0),
                                                   std::vector<size_t>(p, 1)};
    std::vector<size_t> uneven;
    for (int r = 0; r < p; ++r) uneven.push_back(r % 2 == 0 ? 0 : 37 + r);
    count_sets.push_back(uneven);
    for (const auto& counts : count_sets)
      for (bool in_place : {false, true})
        HORA_RETURN_IF_ERROR(
            test_support::check_allgatherv(c, ag, counts, DataType::kFloat32, in_place));
    for (int root = 0; root < p; ++root)
      for (size_t count : {size_t{0}, size_t{1}, size_t{1009}})
        HORA_RETURN_IF_ERROR(
            test_support::check_broadcast(c, bc, count, DataType::kInt64, root, root % 2 == 0));
    for (size_t scale : {size_t{1}, size_t{13}})
      HORA_RETURN_IF_ERROR(test_support::check_alltoallv(c, a2a, scale, DataType::kFloat32));
    return c.barrier(soon());
  });
  EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST_P(GlooRanks, NativeReducescatter) {
  const int n = GetParam();
  Status s = run_gloo(n, [](Communicator& c) -> Status {
    test_support::ReducescatterFn rs = [](Communicator& comm, const void* in, void* out,
                                          const std::vector<size_t>& counts, DataType dtype,
                                          ReduceOp op) {
      return comm.reducescatter(in, out, counts, dtype, op, soon());
    };
    const int p = c.size();
    std::vector<std::vector<size_t>> count_sets = {std::vector<size_t>(p, 1),
                                                   std::vector<size_t>(p, 1009)};
    std::vector<size_t> uneven;
    for (int r = 0; r < p; ++r) uneven.push_back(r % 2 == 0 ? 3 : 50 + r);
    count_sets.push_back(uneven);
    for (const auto& counts : count_sets)
      for (DataType dtype : {DataType::kFloat32, DataType::kInt32, DataType::kBFloat16})
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMax})
          for (bool in_place : {false, true})
            HORA_RETURN_IF_ERROR(
                test_support::check_reducescatter(c, rs, counts, dtype, op, in_place));
    return Status::OK();
  });
  EXPECT_TRUE(s.ok()) << s.to_string();
}

INSTANTIATE_TEST_SUITE_P(Ranks, GlooRanks, ::testing::Values(1, 2, 3, 4),
                         [](const auto& info) { return "np" + std::to_string(info.param); });

TEST(GlooCommunicatorErrors, BadPeerIsInvalidArgument) {
  Status s = run_gloo(2, [](Communicator& c) -> Status {
    char b = 0;
    auto self = c.isend(c.rank(), &b, 1, 0);
    auto far = c.irecv(5, &b, 1, 0);
    if (self.ok() || self.status().code() != StatusCode::kInvalidArgument)
      return Status::internal("send to self was not rejected");
    if (far.ok() || far.status().code() != StatusCode::kInvalidArgument)
      return Status::internal("recv from rank 5 was not rejected");
    return c.barrier(soon());
  });
  EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST(GlooCommunicatorErrors, RecvWithoutSenderTimesOutAndBreaksTheCommunicator) {
  Status s = run_gloo(
      2,
      [](Communicator& c) -> Status {
        if (c.rank() == 1) {
          // Stay alive until rank 0 has seen its timeout.
          char b = 0;
          return c.recv(0, &b, 1, 9, soon());
        }
        char b = 0;
        const auto start = std::chrono::steady_clock::now();
        Status t = c.recv(1, &b, 1, 5, Deadline::after(std::chrono::milliseconds(200)));
        const auto took = std::chrono::steady_clock::now() - start;
        if (t.code() != StatusCode::kTimeout)
          return Status::internal("want kTimeout: " + t.to_string());
        if (t.message().find("rank 1") == std::string::npos)
          return Status::internal("timeout does not name the peer: " + t.to_string());
        if (took > std::chrono::seconds(5)) return Status::internal("timeout took too long");
        Status later = c.barrier(soon());
        if (later.ok()) return Status::internal("a broken communicator accepted a barrier");
        // Let rank 1 go: its recv fails too once the context is poisoned or closed.
        return Status::OK();
      },
      /*timeout_s=*/3);
  // Rank 1's recv ends with an error (rank 0 stopped), which is expected here.
  EXPECT_NE(s.message().find("rank 1"), std::string::npos) << s.to_string();
}

// gloo's own collectives time out without naming a pair; at two ranks hora names the peer.
TEST(GlooCommunicatorErrors, NativeAllreduceTimeoutAtTwoRanksNamesThePeer) {
  Status s = run_gloo(
      2,
      [](Communicator& c) -> Status {
        if (c.rank() == 1) {
          char b = 0;  // stays out of the allreduce until rank 0 gave up
          return c.recv(0, &b, 1, 9, soon());
        }
        float x[4] = {1, 2, 3, 4};
        Status t = c.allreduce(x, x, 4, DataType::kFloat32, ReduceOp::kSum,
                               Deadline::after(std::chrono::milliseconds(200)));
        if (t.code() != StatusCode::kTimeout)
          return Status::internal("want kTimeout: " + t.to_string());
        if (t.message().find("waiting on the peer, rank 1)") == std::string::npos)
          return Status::internal("timeout does not name the peer: " + t.to_string());
        return Status::OK();
      },
      /*timeout_s=*/3);
  EXPECT_NE(s.message().find("rank 1"), std::string::npos) << s.to_string();
}

TEST(GlooCommunicatorErrors, AbortInterruptsAPendingRecv) {
  Status s = run_gloo(
      2,
      [](Communicator& c) -> Status {
        if (c.rank() == 1) return c.barrier(soon());
        char b = 0;
        HORA_ASSIGN_OR_RETURN(auto rq, c.irecv(1, &b, 1, 11));
        // abort() may land before or during the wait; either way the wait must end at once.
        std::thread aborter([&] { c.abort(); });
        const auto start = std::chrono::steady_clock::now();
        Status w = rq->wait(soon());
        aborter.join();
        if (w.code() != StatusCode::kRemote || w.message().find("abort") == std::string::npos)
          return Status::internal("want kRemote aborted: " + w.to_string());
        if (std::chrono::steady_clock::now() - start > std::chrono::seconds(5))
          return Status::internal("abort took too long");
        Status after = c.barrier(soon());
        if (after.ok()) return Status::internal("barrier after abort succeeded");
        return Status::OK();
      },
      3);
  // Rank 1's barrier cannot complete without rank 0; it fails with a timeout or remote error.
  EXPECT_NE(s.message().find("rank 1"), std::string::npos) << s.to_string();
}

TEST(GlooCommunicatorErrors, MissingRankTimesOutAtConnect) {
  MemoryStore store;
  GlooOptions options;
  const auto start = std::chrono::steady_clock::now();
  auto comm = create_gloo_communicator(0, 2, store, options,
                                       Deadline::after(std::chrono::milliseconds(300)));
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), StatusCode::kTimeout) << comm.status().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(GlooBindAddress, ChoosesIfaceHostnameOrLoopback) {
  GlooOptions o;
  o.iface = "eth7";
  EXPECT_EQ(choose_gloo_bind_address(o).value().iface, "eth7");
  o = GlooOptions();
  o.hostname = "10.1.2.3";
  EXPECT_EQ(choose_gloo_bind_address(o).value().hostname, "10.1.2.3");
  for (const char* local : {"", "127.0.0.1", "localhost", "127.0.1.1"}) {
    o = GlooOptions();
    o.rendezvous_addr = local;
    EXPECT_EQ(choose_gloo_bind_address(o).value().hostname, "127.0.0.1") << local;
  }
}

TEST(GlooBindAddress, UnresolvableRendezvousNamesTheVariable) {
  GlooOptions o;
  o.rendezvous_addr = "no-such-host.invalid";
  auto bind = choose_gloo_bind_address(o);
  ASSERT_FALSE(bind.ok());
  EXPECT_EQ(bind.status().code(), StatusCode::kIo);
  EXPECT_NE(bind.status().message().find("HORA_GLOO_IFACE"), std::string::npos);
}

TEST(BackendRegistry, KnowsGlooAndRejectsUnknownNames) {
  EXPECT_TRUE(backend_available("gloo"));
  EXPECT_EQ(resolve_backend_name("auto"), available_backends().front());
  MemoryStore store;
  auto bad = make_communicator("carrier-pigeon", 0, 1, store, BackendOptions(), soon());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("gloo"), std::string::npos);
  if (!backend_available("nccl")) {  // built with NCCL, tests/collectives/backends/nccl cover it
    auto nccl = make_communicator("nccl", 0, 1, store, BackendOptions(), soon());
    ASSERT_FALSE(nccl.ok());
    EXPECT_EQ(nccl.status().code(), StatusCode::kUnimplemented);
  }
  auto one = make_communicator("gloo", 0, 1, store, BackendOptions(), soon());
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  EXPECT_EQ(one.value()->size(), 1);
  EXPECT_STREQ(one.value()->backend_name(), "gloo");
}

}  // namespace
}  // namespace collectives
}  // namespace hora
