// main() of the NCCL multi-process tests: one rank per GPU, started by horarun. It joins the
// job's store (as hora::init would, without the engine, which does not carry GPU tensors) and
// creates the job's NCCL communicator; the tests reach it through nccl_mp_communicator().
//
// Exit status: 0 when every test passed on this rank; 1 on a failure; 77 (CTest's
// SKIP_RETURN_CODE) when this machine cannot run the job: no usable GPU, or fewer GPUs on the
// host than ranks (NCCL refuses two ranks on one GPU). HORA_TEST_REQUIRE_GPU=1 turns "no
// usable GPU" into a failure (scripts/gpu_check.sh).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "collectives/backends/registry.h"
#include "collectives/rendezvous/memory_store.h"
#include "collectives/rendezvous/prefix_store.h"
#include "collectives/rendezvous/tcp_store_client.h"
#include "collectives/rendezvous/tcp_store_server.h"
#include "core/config.h"
#include "core/layout.h"
#include "kernels/cuda/cuda_kernels.h"
#include "tests/mp/nccl/nccl_mp_env.h"

namespace hora {
namespace mp {
namespace {

collectives::Communicator* g_comm = nullptr;  // the job's, for the tests (main owns it)

constexpr int kSkip = 77;

int skip(const std::string& why) {
  const char* require = std::getenv("HORA_TEST_REQUIRE_GPU");
  const bool required = require != nullptr && std::strcmp(require, "1") == 0;
  std::printf("%s: %s\n", required ? "FAILED" : "SKIPPED", why.c_str());
  return required ? 1 : kSkip;
}

}  // namespace

collectives::Communicator& nccl_mp_communicator() {
  if (g_comm == nullptr) {
    std::fprintf(stderr, "nccl_mp_communicator() called before main made it\n");
    std::abort();
  }
  return *g_comm;
}

}  // namespace mp
}  // namespace hora

int main(int argc, char** argv) {
  using namespace hora;
  ::testing::InitGoogleTest(&argc, argv);
  auto devices = kernels::cuda::device_count();
  if (!devices.ok()) return mp::skip("no usable CUDA device: " + devices.status().to_string());
  auto layout = read_rank_layout_from_env();
  if (!layout.ok()) {
    std::fprintf(stderr, "rank layout: %s\n", layout.status().to_string().c_str());
    return 1;
  }
  const RankLayout& l = layout.value();
  if (l.local_size > devices.value()) {
    // Every rank sees the same counts, so every rank skips alike.
    return mp::skip(std::to_string(l.local_size) + " ranks on this host but " +
                    std::to_string(devices.value()) + " GPUs: NCCL needs one GPU per rank");
  }
  const Deadline start = Deadline::after_seconds(120);
  std::unique_ptr<collectives::TcpStoreServer> server;
  std::unique_ptr<collectives::Store> store;
  if (!l.has_store()) {
    store = std::make_unique<collectives::MemoryStore>();
  } else {
    if (l.hosts_store) {
      collectives::TcpStoreServer::Options options;
      options.bind_address = "127.0.0.1";
      options.port = l.store_port;
      options.secret = l.secret;
      auto started = collectives::TcpStoreServer::start(options);
      if (!started.ok()) {
        std::fprintf(stderr, "store server: %s\n", started.status().to_string().c_str());
        return 1;
      }
      server = std::move(started).value();
    }
    auto client = collectives::TcpStoreClient::connect(l.store_addr, l.store_port, l.secret, start);
    if (!client.ok()) {
      std::fprintf(stderr, "store: %s\n", client.status().to_string().c_str());
      return 1;
    }
    store = std::move(client).value();
  }
  collectives::PrefixStore scoped("nccl-mp-test", *store);
  collectives::BackendOptions options;
  options.local_rank = l.local_rank;
  auto comm = collectives::make_communicator("nccl", l.rank, l.size, scoped, options, start);
  if (!comm.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", l.rank, comm.status().to_string().c_str());
    return 1;
  }
  mp::g_comm = comm.value().get();
  int rc = RUN_ALL_TESTS();
  // Nobody leaves before everyone is done with NCCL.
  Status done = comm.value()->barrier(Deadline::after_seconds(60));
  if (!done.ok()) {
    std::fprintf(stderr, "rank %d: final barrier: %s\n", l.rank, done.to_string().c_str());
    rc = 1;
  }
  mp::g_comm = nullptr;
  comm.value().reset();
  if (server != nullptr) server->stop();
  return rc == 0 ? 0 : 1;
}
