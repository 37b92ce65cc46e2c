// The engine's device path without a GPU: routing (device_route.h), the job-wide decision
// (device_setup.h), the staging plan, fusion never mixing devices, and the engine end to end on
// N in-process ranks over FakeDeviceRuntime (host memory posing as device memory), with a fake
// NCCL communicator beside the host one: device tensors must reach the NCCL communicator (or be
// staged through pinned memory over the host one), host tensors the host one, in the same job.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "collectives/selector.h"
#include "core/config.h"
#include "core/device_setup.h"
#include "core/engine/device_executor.h"
#include "core/engine/device_route.h"
#include "core/engine/engine.h"
#include "core/engine/fusion_planner.h"
#include "core/engine/handle_state.h"
#include "hora/hora.h"
#include "tests/support/engine_entry.h"
#include "tests/support/fake_device_runtime.h"
#include "tests/support/fake_nccl_communicator.h"
#include "tests/support/inproc_communicator.h"
#include "tests/support/multi_rank.h"

namespace hora {
namespace engine {
namespace {

using test_support::FakeDeviceRuntime;
using test_support::FakeNcclCommunicator;

using test_support::contains;

DeviceSupport support(DeviceMode mode, int device = 0) {
  DeviceSupport s;
  s.mode = mode;
  s.device = device;
  if (mode != DeviceMode::kNone) s.why_none.clear();
  return s;
}

// --- routing ---------------------------------------------------------------------------------

TEST(DeviceRoute, HostTensorsTakeTheHostPathWhateverTheJobHas) {
  for (DeviceMode m : {DeviceMode::kNone, DeviceMode::kNative, DeviceMode::kStaged}) {
    auto p = route_tensor("w", "input", Device::cpu(), support(m));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(*p, DevicePath::kHost);
  }
}

TEST(DeviceRoute, DeviceTensorsGoToNcclOrAreStaged) {
  auto native = route_tensor("w", "input", Device::cuda(1), support(DeviceMode::kNative, 1));
  ASSERT_TRUE(native.ok()) << native.status().to_string();
  EXPECT_EQ(*native, DevicePath::kNative);
  auto staged = route_tensor("w", "input", Device::cuda(0), support(DeviceMode::kStaged, 0));
  ASSERT_TRUE(staged.ok()) << staged.status().to_string();
  EXPECT_EQ(*staged, DevicePath::kStaged);
}

TEST(DeviceRoute, NoGpuPathNamesTensorDeviceAndWhy) {
  DeviceSupport none;
  none.why_none = "rank 2 has no usable CUDA device";
  auto p = route_tensor("fc1.weight", "input", Device::cuda(0), none);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kFailedPrecondition);
  const std::string& m = p.status().message();
  EXPECT_TRUE(contains(m, "tensor 'fc1.weight'")) << m;
  EXPECT_TRUE(contains(m, "cuda:0")) << m;
  EXPECT_TRUE(contains(m, "no GPU path")) << m;
  EXPECT_TRUE(contains(m, "rank 2 has no usable CUDA device")) << m;
}

TEST(DeviceRoute, AnotherGpuThanTheRanksIsRefusedNamingBoth) {
  auto p = route_tensor("b", "input", Device::cuda(3), support(DeviceMode::kNative, 1));
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(contains(p.status().message(), "cuda:3")) << p.status().message();
  EXPECT_TRUE(contains(p.status().message(), "cuda:1")) << p.status().message();
}

// --- the job-wide decision -------------------------------------------------------------------

DeviceDecisionInput decision(const std::string& requested, const std::string& device_backend,
                             std::vector<int> counts, int rank = 0, int local_rank = -1) {
  DeviceDecisionInput in;
  in.requested_backend = requested;
  in.device_backend = device_backend;
  in.gpu_counts = std::move(counts);
  in.rank = rank;
  in.local_rank = local_rank;
  return in;
}

TEST(DeviceDecision, AutoWithNcclAndGpusEverywhereIsNativeOnLocalRankModuloGpus) {
  auto s = decide_device_support(decision("auto", "nccl", {2, 2, 2, 2}, 3, 3));
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->mode, DeviceMode::kNative);
  EXPECT_EQ(s->device, 1);
}

TEST(DeviceDecision, HostBackendStages) {
  auto s = decide_device_support(decision("gloo", "gloo", {1, 1}, 1, 0));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->mode, DeviceMode::kStaged);
  EXPECT_EQ(s->device, 0);
}

TEST(DeviceDecision, ARankWithoutGpuMeansNoneUnlessNcclWasAskedFor) {
  auto s = decide_device_support(decision("auto", "nccl", {1, 0, 1}));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->mode, DeviceMode::kNone);
  EXPECT_TRUE(contains(s->why_none, "rank 1")) << s->why_none;
  auto required = decide_device_support(decision("nccl", "nccl", {1, 0, 1}));
  ASSERT_FALSE(required.ok());
  EXPECT_TRUE(contains(required.status().message(), "HORA_BACKEND=nccl"))
      << required.status().to_string();
  EXPECT_TRUE(contains(required.status().message(), "rank 1")) << required.status().to_string();
}

TEST(DeviceDecision, BuildWithoutCudaIsNoneOrAnErrorForExplicitNccl) {
  DeviceDecisionInput in = decision("auto", "builtin", {0});
  in.runtime_error = "this hora was built without CUDA";
  auto s = decide_device_support(in);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->mode, DeviceMode::kNone);
  EXPECT_TRUE(contains(s->why_none, "without CUDA"));
  in.requested_backend = "nccl";
  auto required = decide_device_support(in);
  ASSERT_FALSE(required.ok());
  EXPECT_EQ(required.status().code(), StatusCode::kUnimplemented);
}

// --- the staging plan ------------------------------------------------------------------------

std::vector<std::string> names(const std::vector<DeviceStep>& steps) {
  std::vector<std::string> out;
  for (DeviceStep s : steps) out.push_back(device_step_name(s));
  return out;
}

TEST(DevicePlan, StagedCopiesThroughHostAroundTheCollective) {
  DeviceBucketPlan p = plan_device_allreduce(DevicePath::kStaged, {3, 0, 5}, 4);
  EXPECT_EQ(p.total_bytes, 32u);
  EXPECT_EQ(p.offsets, (std::vector<size_t>{0, 12, 12}));
  EXPECT_EQ(names(p.steps),
            (std::vector<std::string>{"wait_ready", "pack", "copy_to_host", "host_wait",
                                      "collective", "copy_to_device", "unpack", "finalize"}));
}

TEST(DevicePlan, NativeRunsTheCollectiveOnTheDevice) {
  DeviceBucketPlan p = plan_device_allreduce(DevicePath::kNative, {2}, 2);
  EXPECT_EQ(p.total_bytes, 4u);
  EXPECT_EQ(names(p.steps),
            (std::vector<std::string>{"wait_ready", "pack", "collective", "unpack", "finalize"}));
}

// --- fusion never mixes devices --------------------------------------------------------------

TEST(DeviceFusion, BucketsHoldOneDeviceOnly) {
  std::vector<Response> rs;
  const Device devices[] = {Device::cpu(),   Device::cuda(0), Device::cpu(),
                            Device::cuda(0), Device::cuda(1), Device::cpu()};
  for (int i = 0; i < 6; ++i) {
    Response r;
    r.name = "t" + std::to_string(i);
    r.shape = {16};
    r.device = devices[i];
    rs.push_back(r);
  }
  const std::vector<Bucket> buckets = plan_buckets(rs, int64_t{1} << 20);
  size_t covered = 0;
  for (const Bucket& b : buckets) {
    for (int m : b.members) EXPECT_EQ(rs[m].device, rs[b.members.front()].device) << rs[m].name;
    covered += b.members.size();
  }
  EXPECT_EQ(covered, rs.size());
  EXPECT_GE(buckets.size(), 3u);
}

// --- the engine end to end over the fake runtime ---------------------------------------------

struct Call {
  Handle handle;
  std::vector<float> host;  // host tensors: the buffer itself
  float* data = nullptr;    // where the result lands
  size_t count = 0;
};

// Enqueues an allreduce (or broadcast) of `count` float32 elements of (rank+1)*(i%7+1) on
// `device`, memory from `runtime` for device tensors.
Call submit(Engine& eng, const std::string& name, CollectiveType type, Device device, size_t count,
            int rank, FakeDeviceRuntime& runtime, ReduceOp op = ReduceOp::kSum,
            double prescale = 1.0, double postscale = 1.0) {
  Call c;
  c.count = count;
  if (device.is_cpu()) {
    c.host.resize(count);
    c.data = c.host.data();
  } else {
    c.data = static_cast<float*>(runtime.tensor_memory(count * sizeof(float)));
  }
  for (size_t i = 0; i < count; ++i) c.data[i] = static_cast<float>((rank + 1) * (i % 7 + 1));
  Entry e;
  e.request.name = name;
  e.request.type = type;
  e.request.dtype = DataType::kFloat32;
  e.request.shape = {static_cast<int64_t>(count)};
  e.request.device = device;
  e.request.op = op;
  e.request.prescale = prescale;
  e.request.postscale = postscale;
  e.in = TensorView::flat(c.data, DataType::kFloat32, static_cast<int64_t>(count), device)
             .value()
             .with_stream(reinterpret_cast<void*>(0x1000));
  e.out = e.in;
  c.handle = test_support::enqueue_entry(eng, std::move(e), 30.0);
  return c;
}

Status expect_sum(const Call& c, int n, double factor, const std::string& what) {
  const double ranks_sum = n * (n + 1) / 2.0;
  for (size_t i = 0; i < c.count; ++i) {
    const double want = ranks_sum * static_cast<double>(i % 7 + 1) * factor;
    if (std::abs(c.data[i] - want) > 1e-4 * std::abs(want))
      return Status::internal(what + "[" + std::to_string(i) + "] = " + std::to_string(c.data[i]) +
                              ", want " + std::to_string(want));
  }
  return Status::OK();
}

Config test_config() {
  Config config;
  config.timeout_s = 20;
  config.cycle_time_ms = 1;
  return config;
}

class DeviceEngine : public ::testing::TestWithParam<int> {};

// Device and host tensors in one step: the device ones (fused, and one alone with scale
// factors) reach the fake NCCL communicator on device memory; the host ones the host one.
TEST_P(DeviceEngine, NativeDeviceTensorsGoToNcclHostTensorsStayOnTheHostBackend) {
  const int n = GetParam();
  FakeDeviceRuntime runtime(1);
  test_support::InProcWorld device_world(n);
  std::vector<std::unique_ptr<FakeNcclCommunicator>> nccl;
  for (int r = 0; r < n; ++r)
    nccl.push_back(std::make_unique<FakeNcclCommunicator>(device_world.communicator(r), &runtime));
  Status s = test_support::run_ranks(n, [&](collectives::Communicator& host) -> Status {
    DeviceResources res;
    res.runtime = &runtime;
    res.device_comm = nccl[host.rank()].get();
    res.support = support(DeviceMode::kNative, 0);
    Engine eng(host, engine_options_from(test_config()), nullptr, "", nullptr, &res);
    const int rank = host.rank();
    std::vector<Call> calls;
    calls.push_back(
        submit(eng, "g.a", CollectiveType::kAllreduce, Device::cuda(0), 33, rank, runtime));
    calls.push_back(submit(eng, "g.b", CollectiveType::kAllreduce, Device::cuda(0), 7, rank,
                           runtime, ReduceOp::kAverage));
    calls.push_back(
        submit(eng, "h.a", CollectiveType::kAllreduce, Device::cpu(), 19, rank, runtime));
    calls.push_back(submit(eng, "g.scaled", CollectiveType::kAllreduce, Device::cuda(0), 5, rank,
                           runtime, ReduceOp::kSum, 2.0, 0.5));
    for (Call& c : calls) HORA_RETURN_IF_ERROR(c.handle.wait());
    HORA_RETURN_IF_ERROR(expect_sum(calls[0], n, 1.0, "g.a"));
    HORA_RETURN_IF_ERROR(expect_sum(calls[1], n, 1.0 / n, "g.b"));
    HORA_RETURN_IF_ERROR(expect_sum(calls[2], n, 1.0, "h.a"));
    HORA_RETURN_IF_ERROR(expect_sum(calls[3], n, 1.0, "g.scaled"));
    Call b = submit(eng, "g.bcast", CollectiveType::kBroadcast, Device::cuda(0), 9, rank, runtime);
    HORA_RETURN_IF_ERROR(b.handle.wait());
    for (size_t i = 0; i < b.count; ++i)
      if (b.data[i] != static_cast<float>(i % 7 + 1))  // rank 0's values
        return Status::internal("broadcast element " + std::to_string(i) + " wrong");
    return eng.stop();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  for (int r = 0; r < n; ++r) {
    // Alone, an allreduce bucket is a copy from the inputs to the outputs: no collective.
    EXPECT_EQ(nccl[r]->allreduces.load() >= 1, n > 1) << "rank " << r;
    EXPECT_EQ(nccl[r]->stream_allreduces.load(), nccl[r]->allreduces.load()) << "rank " << r;
    EXPECT_EQ(nccl[r]->broadcasts.load(), 1) << "rank " << r;
  }
  EXPECT_EQ(runtime.count("alloc_pinned"), 0);           // nothing staged
  EXPECT_GE(runtime.count("stream_wait_event"), 4 * n);  // every device input's ready event
  EXPECT_EQ(runtime.live_events(), 0);  // ready events and the engines' own: none leaked
}

// Without NCCL: device tensors are staged through pinned host memory over the host backend.
TEST_P(DeviceEngine, StagedDeviceTensorsTravelThroughPinnedMemory) {
  const int n = GetParam();
  FakeDeviceRuntime runtime(1);
  Status s = test_support::run_ranks(n, [&](collectives::Communicator& host) -> Status {
    DeviceResources res;
    res.runtime = &runtime;
    res.support = support(DeviceMode::kStaged, 0);
    Engine eng(host, engine_options_from(test_config()), nullptr, "", nullptr, &res);
    const int rank = host.rank();
    std::vector<Call> calls;
    for (int t = 0; t < 5; ++t)
      calls.push_back(submit(eng, "s." + std::to_string(t), CollectiveType::kAllreduce,
                             Device::cuda(0), 1 + 17 * t, rank, runtime, ReduceOp::kAverage));
    calls.push_back(submit(eng, "h", CollectiveType::kAllreduce, Device::cpu(), 3, rank, runtime));
    for (Call& c : calls) HORA_RETURN_IF_ERROR(c.handle.wait());
    for (int t = 0; t < 5; ++t)
      HORA_RETURN_IF_ERROR(expect_sum(calls[t], n, 1.0 / n, "s." + std::to_string(t)));
    HORA_RETURN_IF_ERROR(expect_sum(calls[5], n, 1.0, "h"));
    Call b = submit(eng, "s.bcast", CollectiveType::kBroadcast, Device::cuda(0), 4, rank, runtime);
    HORA_RETURN_IF_ERROR(b.handle.wait());
    for (size_t i = 0; i < b.count; ++i)
      if (b.data[i] != static_cast<float>(i % 7 + 1))
        return Status::internal("staged broadcast element " + std::to_string(i) + " wrong");
    return eng.stop();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_GE(runtime.count("alloc_pinned"), n);
  // The allreduce buckets and the broadcast; alone, the allreduces are local copies.
  EXPECT_GE(runtime.count("copy_to_host"), (n > 1 ? 2 : 1) * n);
  EXPECT_GE(runtime.count("copy_to_device"), (n > 1 ? 2 : 1) * n);
}

// Adasum has no NCCL implementation: even in a job with NCCL, device tensors (fused or alone)
// are staged through pinned host memory and reduced by hora's Adasum over the host backend.
// The inputs (rank + 1) * v are parallel, so each pairwise step averages its two factors
// along hora's tree (the first n - p pairs folded, then levels).
TEST_P(DeviceEngine, AdasumDeviceTensorsAreStagedEvenWithNccl) {
  const int n = GetParam();
  std::vector<double> level;
  int p = 1;
  while (p * 2 <= n) p *= 2;
  for (int i = 0; i < n - p; ++i) level.push_back((2 * i + 1 + 2 * i + 2) / 2.0);
  for (int r = 2 * (n - p); r < n; ++r) level.push_back(r + 1);
  while (level.size() > 1) {
    std::vector<double> next;
    for (size_t i = 0; i < level.size(); i += 2) next.push_back((level[i] + level[i + 1]) / 2);
    level.swap(next);
  }
  const double factor = level.front() / (n * (n + 1) / 2.0);  // against expect_sum's sum
  FakeDeviceRuntime runtime(1);
  test_support::InProcWorld device_world(n);
  std::vector<std::unique_ptr<FakeNcclCommunicator>> nccl;
  for (int r = 0; r < n; ++r)
    nccl.push_back(std::make_unique<FakeNcclCommunicator>(device_world.communicator(r), &runtime));
  Status s = test_support::run_ranks(n, [&](collectives::Communicator& host) -> Status {
    DeviceResources res;
    res.runtime = &runtime;
    res.device_comm = nccl[host.rank()].get();
    res.support = support(DeviceMode::kNative, 0);
    Engine eng(host, engine_options_from(test_config()), nullptr, "", nullptr, &res);
    std::vector<Call> calls;
    for (int t = 0; t < 3; ++t)
      calls.push_back(submit(eng, "a." + std::to_string(t), CollectiveType::kAllreduce,
                             Device::cuda(0), 5 + 11 * t, host.rank(), runtime, ReduceOp::kAdasum));
    for (Call& c : calls) HORA_RETURN_IF_ERROR(c.handle.wait());
    for (int t = 0; t < 3; ++t)
      HORA_RETURN_IF_ERROR(expect_sum(calls[t], n, factor, "a." + std::to_string(t)));
    return eng.stop();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  for (int r = 0; r < n; ++r) EXPECT_EQ(nccl[r]->allreduces.load(), 0) << "rank " << r;
  // One rank reduces nothing: its bucket is a device copy from inputs to outputs, never staged.
  if (n > 1) {
    EXPECT_GE(runtime.count("alloc_pinned"), n);
    EXPECT_GE(runtime.count("copy_to_host"), n);
  }
}

// int16 is a dtype NCCL cannot reduce: hora's ring runs over the NCCL communicator instead of
// its native allreduce.
TEST_P(DeviceEngine, NativeInt16RunsHorasRingOverNccl) {
  const int n = GetParam();
  FakeDeviceRuntime runtime(1);
  test_support::InProcWorld device_world(n);
  std::vector<std::unique_ptr<FakeNcclCommunicator>> nccl;
  for (int r = 0; r < n; ++r)
    nccl.push_back(std::make_unique<FakeNcclCommunicator>(device_world.communicator(r), &runtime));
  Status s = test_support::run_ranks(n, [&](collectives::Communicator& host) -> Status {
    DeviceResources res;
    res.runtime = &runtime;
    res.device_comm = nccl[host.rank()].get();
    res.support = support(DeviceMode::kNative, 0);
    Engine eng(host, engine_options_from(test_config()), nullptr, "", nullptr, &res);
    const size_t count = 37;
    auto* data = static_cast<int16_t*>(runtime.tensor_memory(count * 2));
    for (size_t i = 0; i < count; ++i) data[i] = static_cast<int16_t>(host.rank() + i);
    Entry e;
    e.request.name = "i16";
    e.request.type = CollectiveType::kAllreduce;
    e.request.dtype = DataType::kInt16;
    e.request.shape = {static_cast<int64_t>(count)};
    e.request.device = Device::cuda(0);
    e.in = TensorView::flat(data, DataType::kInt16, count, Device::cuda(0)).value();
    e.out = e.in;
    auto state = std::make_shared<detail::HandleState>("i16", 1, 30.0);
    e.handle = state;
    std::vector<Entry> entries;
    entries.push_back(std::move(e));
    HORA_RETURN_IF_ERROR(eng.enqueue(std::move(entries)));
    HORA_RETURN_IF_ERROR(detail::HandleAccess::make(state).wait());
    for (size_t i = 0; i < count; ++i)
      if (data[i] != static_cast<int16_t>(n * (n - 1) / 2 + n * static_cast<int>(i)))
        return Status::internal("i16[" + std::to_string(i) + "] = " + std::to_string(data[i]));
    return eng.stop();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  for (int r = 0; r < n; ++r) EXPECT_EQ(nccl[r]->allreduces.load(), 0) << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(Ranks, DeviceEngine, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return "n" + std::to_string(i.param);
                         });

// The timeline shows a device bucket's phases, as for host buckets.
TEST(DeviceEngineTimeline, DeviceBucketPhasesAreRecorded) {
  FakeDeviceRuntime runtime(1);
  const std::string path = ::testing::TempDir() + "device_timeline.json";
  // Two ranks: alone, the bucket would be a local copy without the fusion buffer's phases.
  Status s = test_support::run_ranks(2, [&](collectives::Communicator& host) -> Status {
    DeviceResources res;
    res.runtime = &runtime;
    res.support = support(DeviceMode::kStaged, 0);
    Config c = test_config();
    c.timeline_path = path;  // written by rank 0 alone
    Engine eng(host, engine_options_from(c), nullptr, "", nullptr, &res);
    Call a =
        submit(eng, "tl.a", CollectiveType::kAllreduce, Device::cuda(0), 8, host.rank(), runtime);
    HORA_RETURN_IF_ERROR(a.handle.wait());
    return eng.stop();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* phase :
       {"MEMCPY_IN_FUSION_BUFFER", "ALLREDUCE", "MEMCPY_OUT_FUSION_BUFFER", "staged"})
    EXPECT_NE(text.find(phase), std::string::npos) << phase << " missing from " << text;
}

TEST(DeviceEngineErrors, DeviceTensorWithoutGpuPathFailsNamingTensorAndDevice) {
  FakeDeviceRuntime runtime(1);
  Status s = test_support::run_ranks(1, [&](collectives::Communicator& host) -> Status {
    DeviceResources res;  // mode none
    res.support.why_none = "this hora was built without CUDA (HORA_WITH_NCCL=OFF)";
    Engine eng(host, engine_options_from(test_config()), nullptr, "", nullptr, &res);
    Call c = submit(eng, "layer3.bias", CollectiveType::kAllreduce, Device::cuda(0), 4, 0, runtime);
    Status got = c.handle.wait();
    if (got.ok()) return Status::internal("a device tensor without a GPU path succeeded");
    for (const char* part : {"layer3.bias", "cuda:0", "no GPU path", "HORA_WITH_NCCL"})
      if (!contains(got.message(), part))
        return Status::internal("error lacks '" + std::string(part) + "': " + got.message());
    // Host tensors still work.
    Call h = submit(eng, "host", CollectiveType::kAllreduce, Device::cpu(), 4, 0, runtime);
    HORA_RETURN_IF_ERROR(h.handle.wait());
    return eng.stop();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
}

TEST(DeviceEngineErrors, CompressionOfANonFloat32DeviceTensorIsRefusedNamingIt) {
  FakeDeviceRuntime runtime(1);
  Status s = test_support::run_ranks(1, [&](collectives::Communicator& host) -> Status {
    DeviceResources res;
    res.runtime = &runtime;
    res.support = support(DeviceMode::kStaged, 0);
    Engine eng(host, engine_options_from(test_config()), nullptr, "", nullptr, &res);
    auto* data = static_cast<int32_t*>(runtime.tensor_memory(16));
    Entry e;
    e.request.name = "steps";
    e.request.type = CollectiveType::kAllreduce;
    e.request.dtype = DataType::kInt32;
    e.request.shape = {4};
    e.request.device = Device::cuda(0);
    e.request.compression = Compression::kFloat16;
    e.in = TensorView::flat(data, DataType::kInt32, 4, Device::cuda(0)).value();
    e.out = e.in;
    e.handle = std::make_shared<detail::HandleState>("steps", 1, 30.0);
    std::vector<Entry> entries;
    entries.push_back(std::move(e));
    Status got = eng.enqueue(std::move(entries));
    if (got.code() != StatusCode::kInvalidArgument)
      return Status::internal("unexpected: " + got.to_string());
    for (const char* part : {"steps", "cuda:0", "int32", "float32 only"})
      if (!contains(got.message(), part))
        return Status::internal("error lacks '" + std::string(part) + "': " + got.message());
    return eng.stop();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
}

}  // namespace
}  // namespace engine
}  // namespace hora
