// NcclCommunicator driven by FakeNcclApi, no GPU needed: creation (device choice, non-blocking
// init polled to the deadline, abort of a half-made communicator), the failure paths (an
// asynchronous NCCL error, a deadline, abort() from another thread, a dead peer process, host
// memory) and the shapes of the NCCL launches (point-to-point groups, native collectives).
#include "collectives/backends/nccl/nccl_communicator.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "collectives/algorithms/algorithms.h"
#include "collectives/backends/registry.h"
#include "collectives/buffer_ops.h"
#include "collectives/rendezvous/memory_store.h"
#include "tests/collectives/backends/nccl/fake_nccl_api.h"

namespace hora {
namespace collectives {
namespace nccl_test {
namespace {

using std::chrono::milliseconds;

// Device pointers as the fake sees them (never dereferenced).
void* dev(uintptr_t at) { return reinterpret_cast<void*>(at); }

NcclOptions test_options() {
  NcclOptions options;
  options.hostname = "test-host";
  options.finalize_timeout_s = 1.0;
  return options;
}

std::unique_ptr<Communicator> make(FakeNcclApi& api, Store& store, int rank = 0, int size = 1,
                                   NcclOptions options = test_options()) {
  auto comm = create_nccl_communicator(rank, size, store, options, Deadline::after_seconds(5), api);
  EXPECT_TRUE(comm.ok()) << comm.status().to_string();
  return comm.ok() ? std::move(comm).value() : nullptr;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The log from the first line equal to `from` on.
std::vector<std::string> log_from(const FakeNcclApi& api, const std::string& from) {
  std::vector<std::string> out;
  bool on = false;
  for (const auto& line : api.log) {
    on = on || line == from;
    if (on) out.push_back(line);
  }
  return out;
}

TEST(NcclCommunicator, WithoutADeviceCreationFailsNamingIt) {
  FakeNcclApi api;
  api.device_count = 0;
  MemoryStore store;
  auto comm =
      create_nccl_communicator(1, 2, store, test_options(), Deadline::after_seconds(1), api);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(contains(comm.status().message(), "rank 1 of 2: no usable CUDA device"))
      << comm.status().message();
  EXPECT_TRUE(api.log.empty());  // NCCL never touched
}

TEST(NcclCommunicator, InitIsNonBlockingAndPolledUntilReady) {
  FakeNcclApi api;
  api.device_count = 4;
  api.init_polls_in_progress = 20;
  MemoryStore store;
  NcclOptions options = test_options();
  options.local_rank = 6;
  {
    auto comm = make(api, store, 0, 1, options);
    ASSERT_NE(comm, nullptr);
    EXPECT_EQ(api.init_blocking, 0);
    EXPECT_EQ(api.selected_device, 2);  // local rank 6 on 4 devices
    EXPECT_GE(api.async_polls.load(), 20);
    EXPECT_EQ(api.aborts, 0);
  }
  // A clean end finalizes, then destroys, and releases every event.
  EXPECT_EQ(api.finalizes, 1);
  EXPECT_EQ(api.destroys, 1);
  EXPECT_EQ(api.aborts, 0);
  EXPECT_EQ(api.live_events(), 0);
}

// The current CUDA device is per thread: every call that enqueues work makes the
// communicator's device current first (the engine's thread is not the one that created it).
TEST(NcclCommunicator, EveryCallMakesItsDeviceCurrent) {
  FakeNcclApi api;
  api.device_count = 4;
  api.pointer_device = 3;
  MemoryStore store;
  NcclOptions options = test_options();
  options.device = 3;
  auto comm = make(api, store, 0, 1, options);
  ASSERT_NE(comm, nullptr);
  const Deadline soon = Deadline::after_seconds(1);
  api.selected_device = -1;
  ASSERT_TRUE(comm->barrier(soon).ok());
  EXPECT_EQ(api.selected_device, 3);
  api.selected_device = -1;
  auto recv = comm->irecv(0, dev(0x1000), 8, 0).value();
  auto send = comm->isend(0, dev(0x2000), 8, 0).value();
  ASSERT_TRUE(recv->wait(soon).ok());
  EXPECT_EQ(api.selected_device, 3);
  api.selected_device = -1;
  ASSERT_TRUE(comm->buffer_ops()->scale(dev(0x1000), 2, DataType::kFloat32, 0.5).ok());
  EXPECT_EQ(api.selected_device, 3);
}

TEST(NcclCommunicator, InitThatNeverFinishesTimesOutAndAborts) {
  FakeNcclApi api;
  api.init_never_finishes = true;
  MemoryStore store;
  const auto start = std::chrono::steady_clock::now();
  // Rank 0 of 2; rank 1 never comes.
  auto comm = create_nccl_communicator(0, 2, store, test_options(),
                                       Deadline::after(milliseconds(200)), api);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), StatusCode::kTimeout);
  EXPECT_TRUE(contains(comm.status().message(), "ncclCommInitRankConfig"))
      << comm.status().message();
  EXPECT_TRUE(contains(comm.status().message(), "never arrived: rank 1"))
      << comm.status().message();
  EXPECT_EQ(api.aborts, 1);
  EXPECT_EQ(api.destroys, 0);
  EXPECT_LT(took, std::chrono::seconds(3));  // the deadline plus the failure board's wait
}

TEST(NcclCommunicator, AFailedInitCallIsReportedWithNcclsText) {
  FakeNcclApi api;
  api.init_result = ncclInvalidUsage;
  MemoryStore store;
  auto comm =
      create_nccl_communicator(0, 1, store, test_options(), Deadline::after_seconds(1), api);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(comm.status().message(), "ncclInvalidUsage")) << comm.status().message();
}

TEST(NcclCommunicator, AllreduceIsOneNcclCallAndAverageScalesOnTheDevice) {
  FakeNcclApi api;
  MemoryStore store;
  auto comm = make(api, store, 0, 1);
  ASSERT_NE(comm, nullptr);
  ASSERT_TRUE(comm->allreduce(dev(0x10000), dev(0x20000), 8, DataType::kFloat32, ReduceOp::kMax,
                              Deadline::after_seconds(1))
                  .ok());
  ASSERT_TRUE(comm->allreduce(dev(0x10000), dev(0x10000), 6, DataType::kInt32, ReduceOp::kAverage,
                              Deadline::after_seconds(1))
                  .ok());
  const auto calls = log_from(api, "all_reduce 8 type 7 op 2");
  ASSERT_EQ(calls.size(), 3u) << ::testing::PrintToString(api.log);
  EXPECT_EQ(calls[1], "all_reduce 6 type 2 op 0");  // int32, sum
  EXPECT_EQ(calls[2], "scale 6 int32 by 1.000000");
}

TEST(NcclCommunicator, NativeCollectivesPickNcclsCallsByShape) {
  FakeNcclApi api;
  MemoryStore store;
  auto comm = make(api, store, 0, 1);
  ASSERT_NE(comm, nullptr);
  const Deadline soon = Deadline::after_seconds(1);
  const size_t before = api.log.size();
  ASSERT_TRUE(comm->broadcast(dev(0x1000), 3, DataType::kFloat64, 0, soon).ok());
  ASSERT_TRUE(comm->allgatherv(dev(0x1000), dev(0x2000), {5}, DataType::kInt16, soon).ok());
  ASSERT_TRUE(
      comm->reducescatter(dev(0x1000), dev(0x2000), {4}, DataType::kFloat16, ReduceOp::kSum, soon)
          .ok());
  ASSERT_TRUE(comm->alltoallv(dev(0x1000), {2}, dev(0x2000), {2}, DataType::kFloat32, soon).ok());
  ASSERT_TRUE(comm->barrier(soon).ok());
  std::vector<std::string> calls(api.log.begin() + before, api.log.end());
  EXPECT_EQ(calls, (std::vector<std::string>{
                       "broadcast 24 from 0", "all_gather 10", "reduce_scatter 4", "group_start",
                       "send 8 to 0", "recv 8 from 0", "group_end", "all_reduce 1 type 2 op 0"}));
}

// The engine's stream-ordered allreduce: ncclAllReduce on the caller's stream, and nothing
// waited for; the async error is what the finalizer polls.
TEST(NcclCommunicator, StreamAllreduceEnqueuesOnTheCallersStreamWithoutWaiting) {
  FakeNcclApi api;
  MemoryStore store;
  auto comm = make(api, store, 0, 1);
  ASSERT_NE(comm, nullptr);
  ASSERT_TRUE(comm->has_stream_allreduce());
  const size_t before = api.log.size();
  const int queries = api.event_queries.load();
  void* stream = dev(0x77);
  Status s = comm->allreduce_on_stream(dev(0x1000), dev(0x1000), 8, DataType::kFloat32,
                                       ReduceOp::kSum, stream, Deadline::after_seconds(1));
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(std::vector<std::string>(api.log.begin() + before, api.log.end()),
            (std::vector<std::string>{"all_reduce 8 type 7 op 0"}));
  EXPECT_EQ(api.last_all_reduce_stream, static_cast<cudaStream_t>(stream));
  EXPECT_EQ(api.event_queries.load(), queries);  // no wait for the GPU
  s = comm->allreduce_on_stream(dev(0x1000), dev(0x1000), 8, DataType::kFloat32, ReduceOp::kAverage,
                                stream, Deadline::after_seconds(1));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(comm->async_error().ok());
  api.async_error_after_polls = api.async_polls.load();
  s = comm->async_error();
  EXPECT_EQ(s.code(), StatusCode::kRemote) << s.to_string();
  EXPECT_TRUE(contains(s.message(), "ncclRemoteError")) << s.message();
}

TEST(NcclCommunicatorRefusals, WhatNcclCannotReduceOrReach) {
  FakeNcclApi api;
  MemoryStore store;
  auto comm = make(api, store, 0, 1);
  ASSERT_NE(comm, nullptr);
  const Deadline soon = Deadline::after_seconds(1);
  Status s = comm->allreduce(dev(0x1000), dev(0x1000), 4, DataType::kBool, ReduceOp::kSum, soon);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(contains(s.message(), "not defined for bool")) << s.message();
  s = comm->allreduce(dev(0x1000), dev(0x1000), 4, DataType::kInt16, ReduceOp::kMax, soon);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.to_string();
  api.host_pointers.insert(dev(0x5000));
  s = comm->allreduce(dev(0x5000), dev(0x1000), 4, DataType::kFloat32, ReduceOp::kSum, soon);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(s.message(), "is host memory")) << s.message();
  api.pointer_device = 1;
  s = comm->broadcast(dev(0x1000), 4, DataType::kFloat32, 0, soon);
  EXPECT_TRUE(contains(s.message(), "is on cuda:1, not on this communicator's cuda:0"))
      << s.message();
  // Refusals do not break the communicator.
  api.pointer_device = 0;
  EXPECT_TRUE(comm->barrier(soon).ok());
}

TEST(NcclCommunicatorFailures, AnAsyncRemoteErrorAbortsAndBreaksTheCommunicator) {
  FakeNcclApi api;
  MemoryStore store;
  auto comm = make(api, store, 0, 1);
  ASSERT_NE(comm, nullptr);
  api.async_error_after_polls = api.async_polls.load();
  Status s = comm->allreduce(dev(0x1000), dev(0x1000), 4, DataType::kFloat32, ReduceOp::kSum,
                             Deadline::after_seconds(1));
  EXPECT_EQ(s.code(), StatusCode::kRemote) << s.to_string();
  EXPECT_TRUE(contains(s.message(), "ncclRemoteError")) << s.message();
  EXPECT_TRUE(contains(s.message(), "the fake's last error")) << s.message();
  EXPECT_EQ(api.aborts, 1);
  Status later = comm->barrier(Deadline::after_seconds(1));
  EXPECT_EQ(later.code(), StatusCode::kRemote);
  EXPECT_TRUE(contains(later.message(), "broken by an earlier failure")) << later.message();
  comm.reset();
  EXPECT_EQ(api.aborts, 1);  // not aborted twice, never finalized
  EXPECT_EQ(api.finalizes, 0);
}

TEST(NcclCommunicatorFailures, ACollectiveThatNeverEndsTimesOutNamingIt) {
  FakeNcclApi api;
  MemoryStore store;
  auto comm = make(api, store, 0, 1);
  ASSERT_NE(comm, nullptr);
  api.events_never_complete = true;
  Status s = comm->allreduce(dev(0x1000), dev(0x1000), 4, DataType::kFloat32, ReduceOp::kSum,
                             Deadline::after(milliseconds(100)));
  EXPECT_EQ(s.code(), StatusCode::kTimeout) << s.to_string();
  EXPECT_TRUE(contains(s.message(), "rank 0 of 1 (cuda:0): allreduce of 4 float32")) << s.message();
  EXPECT_EQ(api.aborts, 1);
}

TEST(NcclCommunicatorFailures, AbortFromAnotherThreadEndsAWaitPromptly) {
  FakeNcclApi api;
  MemoryStore store;
  auto comm = make(api, store, 0, 1);
  ASSERT_NE(comm, nullptr);
  api.events_never_complete = true;
  std::thread aborter([&] {
    std::this_thread::sleep_for(milliseconds(50));
    comm->abort();
  });
  const auto start = std::chrono::steady_clock::now();
  Status s = comm->barrier(Deadline::after_seconds(30));
  aborter.join();
  EXPECT_EQ(s.code(), StatusCode::kRemote) << s.to_string();
  EXPECT_TRUE(contains(s.message(), "aborted")) << s.message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(api.aborts, 1);
  EXPECT_EQ(comm->barrier(Deadline::after_seconds(1)).code(), StatusCode::kRemote);
}

TEST(NcclCommunicatorFailures, APeerProcessThatIsGoneIsNamed) {
  // A pid that surely no longer runs: a child that exited and was reaped.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);

  FakeNcclApi api;
  MemoryStore store;
  const std::string record = "test-host " + std::to_string(child);
  ASSERT_TRUE(store.set("nccl/proc/1", Bytes(record.begin(), record.end())).ok());
  auto comm = make(api, store, 0, 2);
  ASSERT_NE(comm, nullptr);
  api.events_never_complete = true;
  Status s = comm->allreduce(dev(0x1000), dev(0x1000), 4, DataType::kFloat32, ReduceOp::kSum,
                             Deadline::after_seconds(20));
  EXPECT_EQ(s.code(), StatusCode::kRemote) << s.to_string();
  EXPECT_TRUE(
      contains(s.message(), "rank 1 (pid " + std::to_string(child) + " on test-host) is gone"))
      << s.message();
  EXPECT_EQ(api.aborts, 1);
}

// Point to point: queued until a wait, then one group with every queued send and the queued
// receives from the awaited receive's peer up to it.
TEST(NcclCommunicatorP2p, AWaitLaunchesTheSendsAndTheReceivesItNeeds) {
  FakeNcclApi api;
  MemoryStore store;
  // make() reads the peers' process records: post them first.
  for (int r : {1, 2}) {
    const std::string record = "other-host " + std::to_string(100 + r);
    ASSERT_TRUE(
        store.set("nccl/proc/" + std::to_string(r), Bytes(record.begin(), record.end())).ok());
  }
  auto comm = make(api, store, 0, 3);
  ASSERT_NE(comm, nullptr);
  const Deadline soon = Deadline::after_seconds(1);
  auto r2a = comm->irecv(2, dev(0x1000), 16, 7).value();
  auto r2b = comm->irecv(2, dev(0x2000), 32, 7).value();
  auto r1 = comm->irecv(1, dev(0x3000), 8, 7).value();
  auto s1 = comm->isend(1, dev(0x4000), 0, 7).value();  // zero bytes travel as one
  const size_t before = api.log.size();
  ASSERT_TRUE(r2a->wait(soon).ok());
  ASSERT_TRUE(s1->wait(soon).ok());  // already launched with r2a
  std::vector<std::string> first(api.log.begin() + before, api.log.end());
  EXPECT_EQ(first, (std::vector<std::string>{"group_start", "recv 16 from 2", "send 1 to 1",
                                             "group_end"}));
  ASSERT_TRUE(r1->wait(soon).ok());
  ASSERT_TRUE(r2b->wait(soon).ok());
  std::vector<std::string> rest(api.log.begin() + before + first.size(), api.log.end());
  EXPECT_EQ(rest, (std::vector<std::string>{"group_start", "recv 8 from 1", "group_end",
                                            "group_start", "recv 32 from 2", "group_end"}));
  EXPECT_EQ(api.live_events(), 4);  // the collective event and one per launched group
  r2a.reset();
  r2b.reset();
  r1.reset();
  s1.reset();
  EXPECT_EQ(api.live_events(), 1);  // the groups' events went with their last request
}

TEST(NcclCommunicatorP2p, AStepOfSendAndReceiveIsOneGroup) {
  FakeNcclApi api;
  MemoryStore store;
  const std::string record = "other-host 77";
  ASSERT_TRUE(store.set("nccl/proc/1", Bytes(record.begin(), record.end())).ok());
  auto comm = make(api, store, 0, 2);
  ASSERT_NE(comm, nullptr);
  const Deadline soon = Deadline::after_seconds(1);
  const size_t before = api.log.size();
  for (int step = 0; step < 2; ++step) {
    auto recv = comm->irecv(1, dev(0x1000), 64, 0).value();
    auto send = comm->isend(1, dev(0x2000), 64, 0).value();
    ASSERT_TRUE(recv->wait(soon).ok());
    ASSERT_TRUE(send->wait(soon).ok());
  }
  std::vector<std::string> calls(api.log.begin() + before, api.log.end());
  const std::vector<std::string> step = {"group_start", "recv 64 from 1", "send 64 to 1",
                                         "group_end"};
  std::vector<std::string> expected = step;
  expected.insert(expected.end(), step.begin(), step.end());
  EXPECT_EQ(calls, expected);
}

// hora's ring over the NCCL communicator (rank 0 of 2; the fake moves no data): every reduce
// and the average's scale go to the CUDA kernels (never the CPU kernels: the pointers are not
// host memory), each block travels as one message, each step is one group, and the call waits
// for the stream before it returns.
TEST(NcclCommunicatorP2p, HorasRingRunsOneGroupPerStepWithDeviceKernels) {
  FakeNcclApi api;
  MemoryStore store;
  const std::string record = "other-host 77";
  ASSERT_TRUE(store.set("nccl/proc/1", Bytes(record.begin(), record.end())).ok());
  auto comm = make(api, store, 0, 2);
  ASSERT_NE(comm, nullptr);
  ASSERT_NE(comm->buffer_ops(), nullptr);
  collectives::AlgorithmOptions options;
  options.deadline = Deadline::after_seconds(5);
  options.segment_bytes = 4;  // ignored: NCCL needs whole blocks
  const size_t before = api.log.size();
  Status s = collectives::ring_allreduce(*comm, dev(0x1000), dev(0x2000), 8, DataType::kFloat32,
                                         ReduceOp::kAverage, options);
  ASSERT_TRUE(s.ok()) << s.to_string();
  std::vector<std::string> calls(api.log.begin() + before, api.log.end());
  EXPECT_EQ(calls, (std::vector<std::string>{"group_start", "send 16 to 1", "recv 16 from 1",
                                             "group_end", "reduce3 4 float32 average",
                                             "scale 4 float32 by 0.500000", "group_start",
                                             "send 16 to 1", "recv 16 from 1", "group_end"}));
}

TEST(NcclCommunicatorP2p, ARequestDroppedBeforeItsLaunchNeverReachesNccl) {
  FakeNcclApi api;
  MemoryStore store;
  auto comm = make(api, store, 0, 1);
  ASSERT_NE(comm, nullptr);
  comm->irecv(0, dev(0x1000), 4, 0).value().reset();  // dropped unlaunched
  auto send = comm->isend(0, dev(0x2000), 4, 0).value();
  auto recv = comm->irecv(0, dev(0x3000), 4, 0).value();
  const size_t before = api.log.size();
  ASSERT_TRUE(recv->wait(Deadline::after_seconds(1)).ok());
  std::vector<std::string> calls(api.log.begin() + before, api.log.end());
  EXPECT_EQ(calls,
            (std::vector<std::string>{"group_start", "send 4 to 0", "recv 4 from 0", "group_end"}));
}

TEST(NcclCommunicatorP2p, BadPeersAndHostBuffersAreRefusedAtPosting) {
  FakeNcclApi api;
  MemoryStore store;
  auto comm = make(api, store, 0, 1);
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(comm->isend(1, dev(0x1000), 4, 0).status().code(), StatusCode::kInvalidArgument);
  api.host_pointers.insert(dev(0x1000));
  auto refused = comm->irecv(0, dev(0x1000), 4, 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(contains(refused.status().message(), "recv from rank 0: buffer"))
      << refused.status().message();
}

TEST(NcclRegistry, AutoMeansAHostBackendAndDeviceAutoMeansNccl) {
  EXPECT_TRUE(backend_available("nccl"));
  EXPECT_NE(resolve_backend_name("auto"), "nccl");
  EXPECT_EQ(resolve_device_backend_name("auto"), "nccl");
  EXPECT_EQ(resolve_device_backend_name("gloo"), "gloo");
}

}  // namespace
}  // namespace nccl_test
}  // namespace collectives
}  // namespace hora
