// The DeviceFinalizer (device_finalizer.h) on its own and in the engine, over FakeDeviceRuntime
// with the device paused (work in flight) or failing: completion order, many buckets in flight,
// a device-side error failing exactly its bucket, shutdown with work in flight (drained, or
// failed at the deadline), and a lost peer failing every pending handle.
#include "core/engine/device_finalizer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/config.h"
#include "core/engine/engine.h"
#include "hora/hora.h"
#include "tests/support/engine_entry.h"
#include "tests/support/fake_device_runtime.h"
#include "tests/support/fake_nccl_communicator.h"
#include "tests/support/inproc_communicator.h"
#include "tests/support/multi_rank.h"

namespace hora {
namespace engine {
namespace {

using test_support::contains;
using test_support::FakeDeviceRuntime;
using test_support::FakeNcclCommunicator;

// Jobs on one fake stream; each job's completion appends its index and outcome.
struct Jobs {
  FakeDeviceRuntime rt{1};
  DeviceStream stream = rt.create_stream(0).value();
  Mutex mu;
  std::vector<int> order HORA_GUARDED_BY(mu);
  std::vector<Status> outcomes HORA_GUARDED_BY(mu);

  // A job whose event is recorded now on the stream.
  DeviceFinalizer::Job make(int index) {
    DeviceEvent e = rt.create_event(0).value();
    EXPECT_TRUE(rt.record_event(0, e, stream).ok());
    DeviceFinalizer::Job j;
    j.device = 0;
    j.event = std::shared_ptr<void>(e, [this](void* p) { rt.destroy_event(0, p); });
    j.what = "job " + std::to_string(index);
    j.complete = [this, index](const Status& s) {
      MutexLock lock(&mu);
      order.push_back(index);
      outcomes.push_back(s);
    };
    return j;
  }
};

TEST(DeviceFinalizer, CompletesInSubmissionOrderOnlyOnceTheDeviceDidWithManyInFlight) {
  Jobs jobs;
  {
    DeviceFinalizer f(&jobs.rt, nullptr, 20);
    jobs.rt.pause_device();
    constexpr int kJobs = 64;
    for (int i = 0; i < kJobs; ++i) ASSERT_TRUE(f.submit(jobs.make(i)).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    {
      MutexLock lock(&jobs.mu);
      EXPECT_TRUE(jobs.order.empty()) << "completed while the device still ran";
    }
    EXPECT_EQ(f.in_flight(), kJobs);
    EXPECT_EQ(f.max_in_flight(), kJobs);
    jobs.rt.resume_device();
    ASSERT_TRUE(f.drain(Deadline::after_seconds(20)).ok());
    EXPECT_EQ(f.in_flight(), 0);
    EXPECT_EQ(f.finished(), kJobs);
    MutexLock lock(&jobs.mu);
    ASSERT_EQ(jobs.order.size(), static_cast<size_t>(kJobs));
    for (int i = 0; i < kJobs; ++i) {
      EXPECT_EQ(jobs.order[i], i);
      EXPECT_TRUE(jobs.outcomes[i].ok()) << jobs.outcomes[i].to_string();
    }
  }
  EXPECT_EQ(jobs.rt.live_events(), 0);
}

TEST(DeviceFinalizer, ADrainPastItsDeadlineFailsWhatIsStillRunningNamingIt) {
  Jobs jobs;
  DeviceFinalizer f(&jobs.rt, nullptr, 20);
  ASSERT_TRUE(f.submit(jobs.make(0)).ok());
  jobs.rt.pause_device();
  ASSERT_TRUE(f.submit(jobs.make(1)).ok());
  ASSERT_TRUE(f.submit(jobs.make(2)).ok());
  Status s = f.drain(Deadline::after(std::chrono::milliseconds(100)));
  EXPECT_EQ(s.code(), StatusCode::kTimeout) << s.to_string();
  jobs.rt.resume_device();
  MutexLock lock(&jobs.mu);
  ASSERT_EQ(jobs.order, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(jobs.outcomes[0].ok());
  for (int i : {1, 2}) {
    EXPECT_EQ(jobs.outcomes[i].code(), StatusCode::kTimeout) << jobs.outcomes[i].to_string();
    EXPECT_TRUE(contains(jobs.outcomes[i].message(), "job " + std::to_string(i)))
        << jobs.outcomes[i].message();
  }
}

TEST(DeviceFinalizer, ALostPeerFailsEveryPendingJobAndLaterSubmits) {
  Jobs jobs;
  Mutex health_mu;
  Status health;
  DeviceFinalizer f(
      &jobs.rt,
      [&]() {
        MutexLock lock(&health_mu);
        return health;
      },
      20);
  jobs.rt.pause_device();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(f.submit(jobs.make(i)).ok());
  {
    MutexLock lock(&health_mu);
    health = Status::remote("rank 1 is gone");
  }
  Status s = f.drain(Deadline::after_seconds(20));
  EXPECT_EQ(s.code(), StatusCode::kRemote) << s.to_string();
  Status later = f.submit(jobs.make(3));
  EXPECT_EQ(later.code(), StatusCode::kRemote);
  jobs.rt.resume_device();
  MutexLock lock(&jobs.mu);
  ASSERT_EQ(jobs.order, (std::vector<int>{0, 1, 2, 3}));
  for (const Status& o : jobs.outcomes) {
    EXPECT_EQ(o.code(), StatusCode::kRemote) << o.to_string();
    EXPECT_TRUE(contains(o.message(), "rank 1 is gone")) << o.message();
  }
}

// --- in the engine ---------------------------------------------------------------------------

struct Tensor {
  Handle handle;
  float* data = nullptr;
};

// An allreduce of `count` elements of `value`, in place in `data` (null: fresh device memory).
Tensor allreduce(Engine& eng, FakeDeviceRuntime& rt, const std::string& name, size_t count,
                 float value, float* data = nullptr) {
  Tensor t;
  t.data = data != nullptr ? data : static_cast<float*>(rt.tensor_memory(count * sizeof(float)));
  for (size_t i = 0; i < count; ++i) t.data[i] = value;
  Entry e;
  e.request.name = name;
  e.request.type = CollectiveType::kAllreduce;
  e.request.dtype = DataType::kFloat32;
  e.request.shape = {static_cast<int64_t>(count)};
  e.request.device = Device::cuda(0);
  e.in = TensorView::flat(t.data, DataType::kFloat32, static_cast<int64_t>(count), Device::cuda(0))
             .value()
             .with_stream(reinterpret_cast<void*>(0x1000));
  e.out = e.in;
  t.handle = test_support::enqueue_entry(eng, std::move(e), 30.0);
  return t;
}

DeviceResources native(FakeDeviceRuntime* rt, collectives::Communicator* nccl) {
  DeviceResources res;
  res.runtime = rt;
  res.device_comm = nccl;
  res.support.mode = DeviceMode::kNative;
  res.support.device = 0;
  res.support.why_none.clear();
  return res;
}

Config config(double timeout_s = 20) {
  Config c;
  c.timeout_s = timeout_s;
  c.cycle_time_ms = 1;
  c.fusion_threshold_bytes = 16;  // every tensor below is a bucket of its own
  return c;
}

// One rank over the fake NCCL communicator with the device paused: `n` tensors "<prefix><i>"
// enqueued and every bucket's completion event recorded (the engine's thread does not wait for
// the device), then `body` with the engine, the runtime, the communicator and the tensors.
using PausedBody =
    std::function<Status(Engine&, FakeDeviceRuntime&, FakeNcclCommunicator&, std::vector<Tensor>&)>;
Status with_paused_engine(double timeout_s, int n, const PausedBody& body) {
  FakeDeviceRuntime rt(1);
  test_support::InProcWorld device_world(1);
  FakeNcclCommunicator nccl(device_world.communicator(0), &rt);
  Status s = test_support::run_ranks(1, [&](collectives::Communicator& host) -> Status {
    DeviceResources res = native(&rt, &nccl);
    Engine eng(host, engine_options_from(config(timeout_s)), nullptr, "", nullptr, &res);
    rt.pause_device();
    std::vector<Tensor> ts;
    for (int i = 0; i < n; ++i) ts.push_back(allreduce(eng, rt, "t" + std::to_string(i), 8, 1));
    // A ready event per tensor (admit) and a completion event per bucket.
    for (int spins = 0; spins < 5000 && rt.count("record_event") < 2 * n; ++spins)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (rt.count("record_event") < 2 * n) return Status::internal("buckets were not enqueued");
    Status outcome = body(eng, rt, nccl, ts);
    rt.resume_device();
    return outcome;
  });
  if (s.ok() && rt.live_events() != 0)
    return Status::internal(std::to_string(rt.live_events()) + " events leaked");
  return s;
}

// Rank 0's unpack into 'b' faults on the device: 'b' fails there with the device's error,
// naming it; 'a' and 'c' (other buckets) and every tensor of rank 1 complete.
TEST(DeviceFinalizerEngine, ADeviceErrorFailsExactlyItsBucket) {
  FakeDeviceRuntime rt(1);
  test_support::InProcWorld device_world(2);
  std::vector<std::unique_ptr<FakeNcclCommunicator>> nccl;
  for (int r = 0; r < 2; ++r)
    nccl.push_back(std::make_unique<FakeNcclCommunicator>(device_world.communicator(r), &rt));
  std::vector<Status> b_status(2);
  Status s = test_support::run_ranks(2, [&](collectives::Communicator& host) -> Status {
    const int rank = host.rank();
    DeviceResources res = native(&rt, nccl[rank].get());
    Engine eng(host, engine_options_from(config()), nullptr, "", nullptr, &res);
    Tensor a = allreduce(eng, rt, "a", 8, 1.0f);
    // The fault is set up before 'b' is enqueued, on b's memory: its unpack.
    float* b_data = static_cast<float*>(rt.tensor_memory(8 * sizeof(float)));
    if (rank == 0) rt.fail_copy_to(b_data, Status::internal("illegal memory access"));
    Handle b = allreduce(eng, rt, "b", 8, 2.0f, b_data).handle;
    Tensor c = allreduce(eng, rt, "c", 8, 3.0f);
    HORA_RETURN_IF_ERROR(a.handle.wait());
    b_status[rank] = b.wait();
    HORA_RETURN_IF_ERROR(c.handle.wait());
    if (a.data[0] != 2.0f || c.data[7] != 6.0f) return Status::internal("wrong sums");
    return eng.stop();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(b_status[0].code(), StatusCode::kInternal) << b_status[0].to_string();
  EXPECT_TRUE(contains(b_status[0].message(), "illegal memory access")) << b_status[0].message();
  EXPECT_TRUE(contains(b_status[0].message(), "allreduce of 'b'")) << b_status[0].message();
  EXPECT_TRUE(b_status[1].ok()) << b_status[1].to_string();
}

// EngineOptions::device_host_waits (the benchmarks' baseline): the same results, NCCL's blocking
// allreduce even at one rank, and no stream-ordered one.
TEST(DeviceFinalizerEngine, TheHostWaitsBaselineGivesTheSameResults) {
  FakeDeviceRuntime rt(1);
  test_support::InProcWorld device_world(1);
  FakeNcclCommunicator nccl(device_world.communicator(0), &rt);
  Status s = test_support::run_ranks(1, [&](collectives::Communicator& host) -> Status {
    DeviceResources res = native(&rt, &nccl);
    EngineOptions eo = engine_options_from(config());
    eo.device_host_waits = true;
    Engine eng(host, eo, nullptr, "", nullptr, &res);
    Tensor a = allreduce(eng, rt, "a", 8, 3.0f);
    HORA_RETURN_IF_ERROR(a.handle.wait());
    if (a.data[5] != 3.0f) return Status::internal("wrong result");
    return eng.stop();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(nccl.allreduces.load(), 1);
  EXPECT_EQ(nccl.stream_allreduces.load(), 0);
  EXPECT_GE(rt.count("host_wait"), 2);  // the pack's, the bucket's completion
}

// Shutdown while the device still works: stop() waits for the work in flight and the handles
// complete with their results, not with the shutdown's error.
TEST(DeviceFinalizerEngine, ShutdownDrainsWorkInFlight) {
  Status s = with_paused_engine(
      20, 16,
      [](Engine& eng, FakeDeviceRuntime& rt, FakeNcclCommunicator&, std::vector<Tensor>& ts) {
        for (Tensor& t : ts)
          if (t.handle.poll()) return Status::internal("completed while the device was paused");
        std::thread resume([&] {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          rt.resume_device();
        });
        Status stopped = eng.stop();
        resume.join();
        HORA_RETURN_IF_ERROR(stopped);
        for (Tensor& t : ts) HORA_RETURN_IF_ERROR(t.handle.wait());
        return Status::OK();
      });
  ASSERT_TRUE(s.ok()) << s.to_string();
}

// The device never finishes: shutdown fails the work in flight at the deadline, naming it.
TEST(DeviceFinalizerEngine, ShutdownWithAStuckDeviceFailsAtTheDeadline) {
  Status stuck;
  Status s = with_paused_engine(
      0.3, 1, [&](Engine& eng, FakeDeviceRuntime&, FakeNcclCommunicator&, std::vector<Tensor>& ts) {
        eng.stop().IgnoreError();  // reports the shutdown; the handle says what happened to it
        stuck = ts[0].handle.wait();
        return Status::OK();
      });
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(stuck.code(), StatusCode::kTimeout) << stuck.to_string();
  EXPECT_TRUE(contains(stuck.message(), "allreduce of 't0'")) << stuck.message();
}

// The NCCL communicator fails under work in flight (a peer lost): every pending handle fails
// with its error, and the engine stops.
TEST(DeviceFinalizerEngine, ALostPeerFailsEveryPendingHandle) {
  Status s = with_paused_engine(
      20, 8,
      [](Engine& eng, FakeDeviceRuntime& rt, FakeNcclCommunicator& nccl, std::vector<Tensor>& ts) {
        nccl.fail_async(Status::remote("rank 3 (pid 7 on host b) is gone"));
        for (Tensor& t : ts) {
          Status w = t.handle.wait();
          if (w.code() != StatusCode::kRemote || !contains(w.message(), "rank 3"))
            return Status::internal("pending handle got: " + w.to_string());
        }
        // The next device bucket finds the failure and the engine stops.
        Status late = allreduce(eng, rt, "late", 8, 1).handle.wait();
        if (late.ok()) return Status::internal("a bucket after the failure completed");
        eng.stop().IgnoreError();
        return Status::OK();
      });
  ASSERT_TRUE(s.ok()) << s.to_string();
}

}  // namespace
}  // namespace engine
}  // namespace hora
