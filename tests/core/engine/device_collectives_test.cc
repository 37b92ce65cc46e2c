// The engine's device path beyond allreduce and broadcast, without a GPU (FakeDeviceRuntime,
// host memory posing as device memory): allgather, alltoall and reducescatter of device
// tensors over the fake NCCL communicator (kNative) and staged through pinned memory over the
// host one (kStaged) at N = 1..4, with the host path's output shape and received splits;
// results in the allocator's device memory or, without one, in the handle's host output; an
// allocator returning host memory fails the handle naming the tensor and both devices;
// float16/bfloat16 compression cast on the device; and the completion event: recorded on the
// engine's stream after the result's last kernel and waited on by the stream given to
// Handle::wait_on_stream.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/engine/device_executor.h"
#include "core/engine/engine.h"
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

// A framework stream of the tests' (opaque to the fake runtime).
DeviceStream const kFrameworkStream = reinterpret_cast<DeviceStream>(0x1000);
DeviceStream const kConsumerStream = reinterpret_cast<DeviceStream>(0x2000);

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Config test_config() {
  Config config;
  config.timeout_s = 20;
  config.cycle_time_ms = 1;
  return config;
}

// One job of `n` in-process ranks whose device tensors go over a fake NCCL communicator
// (native) or are staged through pinned memory (staged), on one FakeDeviceRuntime.
struct Job {
  Job(int n, bool native) : n(n), native(native), device_world(n) {
    for (int r = 0; r < n; ++r)
      nccl.push_back(
          std::make_unique<FakeNcclCommunicator>(device_world.communicator(r), &runtime));
  }
  // Runs `body` on every rank with an engine whose device path is this job's.
  Status run(const std::function<Status(Engine&, int rank)>& body) {
    return test_support::run_ranks(n, [&](collectives::Communicator& host) -> Status {
      DeviceResources res;
      res.runtime = &runtime;
      res.support.mode = native ? DeviceMode::kNative : DeviceMode::kStaged;
      res.support.device = 0;
      res.support.why_none.clear();
      if (native) res.device_comm = nccl[host.rank()].get();
      Engine eng(host, engine_options_from(test_config()), nullptr, "", nullptr, &res);
      Status s = body(eng, host.rank());
      Status stopped = eng.stop();
      return s.ok() ? stopped : s;
    });
  }

  const int n;
  const bool native;
  FakeDeviceRuntime runtime{1};
  test_support::InProcWorld device_world;
  std::vector<std::unique_ptr<FakeNcclCommunicator>> nccl;
};

// A device tensor of `shape` float32 elements value(i) on cuda:0, on the framework stream.
TensorView device_tensor(FakeDeviceRuntime& rt, const std::vector<int64_t>& shape,
                         const std::function<float(size_t)>& value) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  auto* data = static_cast<float*>(rt.tensor_memory(static_cast<size_t>(count) * sizeof(float)));
  for (int64_t i = 0; i < count; ++i) data[i] = value(static_cast<size_t>(i));
  return TensorView::make(data, DataType::kFloat32, shape, Device::cuda(0))
      .value()
      .with_stream(kFrameworkStream);
}

// An allocator making device memory on cuda:0 (as hora.torch's does), or host memory.
OutputAllocator allocator(FakeDeviceRuntime& rt, bool on_device = true) {
  return
      [&rt, on_device](DataType dtype, const std::vector<int64_t>& shape) -> StatusOr<TensorView> {
        int64_t count = 1;
        for (int64_t d : shape) count *= d;
        const size_t bytes = static_cast<size_t>(count) * data_type_bytes(dtype);
        // Host memory: pinned memory of the fake, which frees it with itself.
        void* data = on_device ? rt.tensor_memory(bytes) : rt.alloc_pinned(bytes).value();
        return TensorView::make(data, dtype, shape, on_device ? Device::cuda(0) : Device::cpu());
      };
}

// Enqueues one collective of `in` and returns its handle (failed when the enqueue failed).
Handle enqueue(Engine& eng, const std::string& name, CollectiveType type, const TensorView& in,
               OutputAllocator allocate = nullptr, std::vector<int64_t> splits = {},
               ReduceOp op = ReduceOp::kSum, Compression compression = Compression::kNone) {
  Entry e;
  e.request.name = name;
  e.request.type = type;
  e.request.dtype = in.dtype();
  e.request.shape = in.shape();
  e.request.device = in.device();
  e.request.op = op;
  e.request.compression = compression;
  e.request.splits = std::move(splits);
  e.in = in;
  if (type == CollectiveType::kAllreduce || type == CollectiveType::kBroadcast) e.out = in;
  e.allocate = std::move(allocate);
  return test_support::enqueue_entry(eng, std::move(e), 30.0);
}

// The float32 result of `h`: in its output allocator's memory (`out`) or its host output.
std::vector<float> result(const Handle& h, const float* out = nullptr) {
  size_t count = 1;
  for (int64_t d : h.output_shape()) count *= static_cast<size_t>(d);
  std::vector<float> v(count);
  if (out != nullptr) {
    std::memcpy(v.data(), out, count * sizeof(float));
  } else if (!h.output().empty()) {
    std::memcpy(v.data(), h.output().data(), count * sizeof(float));
  }
  return v;
}

using test_support::expect_eq;

// An allocator that remembers where it put the result.
OutputAllocator recording(FakeDeviceRuntime& rt, float** where) {
  OutputAllocator inner = allocator(rt);
  return [inner, where](DataType dtype, const std::vector<int64_t>& shape) {
    StatusOr<TensorView> v = inner(dtype, shape);
    if (v.ok()) *where = static_cast<float*>(v.value().data());
    return v;
  };
}

struct Param {
  int n;
  bool native;
};

class DeviceCollectives : public ::testing::TestWithParam<Param> {};

// Rank r contributes r+1 rows of 3; every rank gets all rows in rank order, in the allocator's
// device memory and, without an allocator, in the handle's host output.
TEST_P(DeviceCollectives, AllgatherGathersRowsOfEveryRank) {
  const Param p = GetParam();
  Job job(p.n, p.native);
  Status s = job.run([&](Engine& eng, int rank) -> Status {
    const int64_t rows = rank + 1;
    TensorView in = device_tensor(job.runtime, {rows, 3},
                                  [&](size_t i) { return static_cast<float>(100 * rank + i); });
    float* out = nullptr;
    Handle a = enqueue(eng, "ag.dev", CollectiveType::kAllgather, in, recording(job.runtime, &out));
    Handle b = enqueue(eng, "ag.host", CollectiveType::kAllgather, in);
    HORA_RETURN_IF_ERROR(a.wait());
    HORA_RETURN_IF_ERROR(b.wait());
    std::vector<float> want;
    for (int q = 0; q < p.n; ++q)
      for (int i = 0; i < 3 * (q + 1); ++i) want.push_back(static_cast<float>(100 * q + i));
    const int64_t total = static_cast<int64_t>(want.size()) / 3;
    if (a.output_shape() != std::vector<int64_t>{total, 3} || out == nullptr)
      return Status::internal("allgather output shape " + shape_to_string(a.output_shape()));
    if (!job.runtime.is_device_memory(out))
      return Status::internal("allgather result is not in device memory");
    HORA_RETURN_IF_ERROR(expect_eq(result(a, out), want, "ag.dev"));
    if (b.output_shape() != std::vector<int64_t>{total, 3})
      return Status::internal("host output shape " + shape_to_string(b.output_shape()));
    return expect_eq(result(b), want, "ag.host");
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  for (int r = 0; r < p.n; ++r)
    EXPECT_EQ(job.nccl[r]->allgathers.load(), p.native ? 2 : 0) << "rank " << r;
  if (!p.native) {
    EXPECT_GE(job.runtime.count("copy_to_host"), 2 * p.n);
  }
  EXPECT_GE(job.runtime.count("stream_wait_event"), 2 * p.n);  // the inputs' ready events
  EXPECT_EQ(job.runtime.live_events(), 0);
}

// Rank r sends q+1 rows of 2 to rank q (uneven): received_splits and the rows, in peer order.
TEST_P(DeviceCollectives, AlltoallExchangesUnevenSplits) {
  const Param p = GetParam();
  Job job(p.n, p.native);
  Status s = job.run([&](Engine& eng, int rank) -> Status {
    std::vector<int64_t> splits;
    int64_t rows = 0;
    for (int q = 0; q < p.n; ++q) {
      splits.push_back(q + 1);
      rows += q + 1;
    }
    // Row k of rank r holds 1000 * r + k in both columns.
    TensorView in = device_tensor(job.runtime, {rows, 2}, [&](size_t i) {
      return static_cast<float>(1000 * rank + static_cast<int>(i / 2));
    });
    float* out = nullptr;
    Handle h =
        enqueue(eng, "a2a", CollectiveType::kAlltoall, in, recording(job.runtime, &out), splits);
    HORA_RETURN_IF_ERROR(h.wait());
    std::vector<float> want;
    std::vector<int64_t> want_splits;
    for (int q = 0; q < p.n; ++q) {
      // Rank q sends its rows [sum_{t<rank}(t+1), +rank+1) to this rank.
      const int first = rank * (rank + 1) / 2;
      for (int k = 0; k < rank + 1; ++k)
        for (int c = 0; c < 2; ++c) want.push_back(static_cast<float>(1000 * q + first + k));
      want_splits.push_back(rank + 1);
    }
    if (h.received_splits() != want_splits)
      return Status::internal("received splits " + shape_to_string(h.received_splits()));
    if (h.output_shape() != std::vector<int64_t>{p.n * (rank + 1), 2})
      return Status::internal("alltoall output shape " + shape_to_string(h.output_shape()));
    return expect_eq(result(h, out), want, "a2a");
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  for (int r = 0; r < p.n; ++r)
    EXPECT_EQ(job.nccl[r]->alltoalls.load(), p.native ? 1 : 0) << "rank " << r;
}

// 2n+1 rows of 4: rank r gets the sum over ranks of its block (the first rows % n ranks one row
// more), as the host path.
TEST_P(DeviceCollectives, ReducescatterSumsEachRanksBlock) {
  const Param p = GetParam();
  Job job(p.n, p.native);
  Status s = job.run([&](Engine& eng, int rank) -> Status {
    const int64_t rows = 2 * p.n + 1;
    TensorView in = device_tensor(job.runtime, {rows, 4}, [&](size_t i) {
      return static_cast<float>((rank + 1) * static_cast<int>(i));
    });
    float* out = nullptr;
    Handle h = enqueue(eng, "rs", CollectiveType::kReducescatter, in, recording(job.runtime, &out),
                       {}, ReduceOp::kSum);
    HORA_RETURN_IF_ERROR(h.wait());
    const int64_t first = 2 * rank + (rank < 1 ? rank : 1);  // rows before this rank's block
    const int64_t mine = rank < 1 ? 3 : 2;                   // rows % n == 1
    if (h.output_shape() != std::vector<int64_t>{mine, 4})
      return Status::internal("reducescatter output shape " + shape_to_string(h.output_shape()));
    const float ranks_sum = static_cast<float>(p.n * (p.n + 1) / 2);
    std::vector<float> want;
    for (int64_t i = first * 4; i < (first + mine) * 4; ++i)
      want.push_back(ranks_sum * static_cast<float>(i));
    return expect_eq(result(h, out), want, "rs");
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  for (int r = 0; r < p.n; ++r)
    EXPECT_EQ(job.nccl[r]->reducescatters.load(), p.native ? 1 : 0) << "rank " << r;
}

// Compressed allreduce of device tensors: cast to float16 / bfloat16 on the device, the
// collective on the half type, cast back; small integers survive exactly.
TEST_P(DeviceCollectives, CompressedAllreduceCastsOnTheDevice) {
  const Param p = GetParam();
  Job job(p.n, p.native);
  Status s = job.run([&](Engine& eng, int rank) -> Status {
    std::vector<TensorView> ins;
    std::vector<Handle> hs;
    const Compression kinds[] = {Compression::kFloat16, Compression::kBFloat16};
    for (int k = 0; k < 2; ++k) {
      ins.push_back(device_tensor(job.runtime, {37}, [&](size_t i) {
        return static_cast<float>((rank + 1) * static_cast<int>(i % 5));
      }));
      hs.push_back(enqueue(eng, "c" + std::to_string(k), CollectiveType::kAllreduce, ins.back(),
                           nullptr, {}, ReduceOp::kSum, kinds[k]));
    }
    for (Handle& h : hs) HORA_RETURN_IF_ERROR(h.wait());
    const float ranks_sum = static_cast<float>(p.n * (p.n + 1) / 2);
    for (int k = 0; k < 2; ++k) {
      std::vector<float> got(37), want(37);
      std::memcpy(got.data(), ins[k].data(), 37 * sizeof(float));
      for (size_t i = 0; i < 37; ++i) want[i] = ranks_sum * static_cast<float>(i % 5);
      HORA_RETURN_IF_ERROR(expect_eq(got, want, "c" + std::to_string(k)));
    }
    return Status::OK();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_GE(job.runtime.count("cast float32->float16"), p.n);
  EXPECT_GE(job.runtime.count("cast float16->float32"), p.n);
  EXPECT_GE(job.runtime.count("cast float32->bfloat16"), p.n);
  EXPECT_GE(job.runtime.count("cast bfloat16->float32"), p.n);
  if (p.native) {
    for (int r = 0; r < p.n; ++r) {
      EXPECT_GE(job.nccl[r]->allreduces.load(), 1) << "rank " << r;
      const DataType last = job.nccl[r]->last_dtype.load();
      EXPECT_TRUE(last == DataType::kFloat16 || last == DataType::kBFloat16)
          << data_type_name(last);
    }
  }
}

// The completion event: recorded on the engine's stream after the last kernel and waited on by
// the stream passed to wait_on_stream; a host tensor's wait_on_stream is wait().
TEST_P(DeviceCollectives, WaitOnStreamWaitsForTheCompletionEventOnTheGivenStream) {
  const Param p = GetParam();
  Job job(p.n, p.native);
  Status s = job.run([&](Engine& eng, int rank) -> Status {
    TensorView in = device_tensor(job.runtime, {8}, [&](size_t) { return rank + 1.0f; });
    Handle ar = enqueue(eng, "ev.ar", CollectiveType::kAllreduce, in);
    HORA_RETURN_IF_ERROR(ar.wait_on_stream(kConsumerStream));
    HORA_RETURN_IF_ERROR(ar.wait());
    float* out = nullptr;
    Handle ag = enqueue(eng, "ev.ag", CollectiveType::kAllgather, in, recording(job.runtime, &out));
    HORA_RETURN_IF_ERROR(ag.wait_on_stream(kConsumerStream));
    HORA_RETURN_IF_ERROR(ag.wait());
    std::vector<float> host(4, 1.0f);
    Handle h = enqueue(eng, "ev.host", CollectiveType::kAllreduce,
                       TensorView::flat(host.data(), DataType::kFloat32, 4, Device::cpu()).value());
    HORA_RETURN_IF_ERROR(h.wait_on_stream(kConsumerStream));
    if (host[0] != static_cast<float>(p.n)) return Status::internal("host allreduce wrong");
    return Status::OK();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  int consumer_waits = 0;
  for (const auto& w : job.runtime.stream_waits()) {
    if (w.stream != kConsumerStream) continue;
    ++consumer_waits;
    const DeviceStream engine_stream = job.runtime.recorded_on(w.event);
    EXPECT_NE(engine_stream, nullptr) << "waited on an event never recorded";
    EXPECT_NE(engine_stream, kConsumerStream);
    EXPECT_NE(engine_stream, kFrameworkStream);  // the engine's own stream, not a ready event
  }
  EXPECT_EQ(consumer_waits, 2 * p.n);  // the two device handles on every rank, not the host one
  EXPECT_EQ(job.runtime.live_events(), 0);
}

std::vector<Param> params() {
  std::vector<Param> v;
  for (bool native : {true, false})
    for (int n = 1; n <= 4; ++n) v.push_back({n, native});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Ranks, DeviceCollectives, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& i) {
                           return std::string(i.param.native ? "nccl" : "staged") + "_n" +
                                  std::to_string(i.param.n);
                         });

// An allocator returning host memory for a device tensor's result: the collective still runs
// (the other ranks are not held up), the result lands in the handle's host output, and the
// handle fails naming the tensor and both devices.
TEST(DeviceCollectivesErrors, AllocatorOnTheWrongDeviceFailsNamingTensorAndDevices) {
  Job job(2, false);
  Status s = job.run([&](Engine& eng, int rank) -> Status {
    TensorView in = device_tensor(job.runtime, {2, 2}, [&](size_t i) {
      return static_cast<float>(10 * rank + static_cast<int>(i));
    });
    Handle h =
        enqueue(eng, "emb.rows", CollectiveType::kAllgather, in, allocator(job.runtime, false));
    Status got = h.wait();
    if (got.code() != StatusCode::kInvalidArgument)
      return Status::internal("unexpected: " + got.to_string());
    for (const char* part : {"emb.rows", "output allocator", "cpu", "cuda:0"})
      if (!contains(got.message(), part))
        return Status::internal("error lacks '" + std::string(part) + "': " + got.message());
    return expect_eq(result(h), {0, 1, 2, 3, 10, 11, 12, 13}, "host output");
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
}

// Routing applies to every collective: a device tensor on another GPU than the rank's is
// refused at enqueue naming the tensor and both devices.
TEST(DeviceCollectivesErrors, AnotherGpuThanTheRanksIsRefusedForEveryCollective) {
  Job job(1, true);
  Status s = job.run([&](Engine& eng, int) -> Status {
    void* data = job.runtime.tensor_memory(16);
    const TensorView in =
        TensorView::make(data, DataType::kFloat32, {2, 2}, Device::cuda(1)).value();
    for (CollectiveType t :
         {CollectiveType::kAllgather, CollectiveType::kAlltoall, CollectiveType::kReducescatter}) {
      const std::string name = std::string("other.") + collective_name(t);
      Status got = enqueue(eng, name, t, in, allocator(job.runtime), {1}).wait();
      if (got.code() != StatusCode::kInvalidArgument)
        return Status::internal(name + ": unexpected " + got.to_string());
      for (const std::string& part : {name, std::string("cuda:1"), std::string("cuda:0")})
        if (!contains(got.message(), part))
          return Status::internal("error lacks '" + part + "': " + got.message());
    }
    return Status::OK();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
}

// A grouped allreduce's handle (one state, one part per member) publishes its completion event
// once its last parts ran: wait_on_stream then covers every member.
TEST(DeviceCollectivesEvents, GroupedAllreducePublishesOnceEveryMemberIsEnqueued) {
  Job job(2, false);
  Status s = job.run([&](Engine& eng, int rank) -> Status {
    auto state = std::make_shared<detail::HandleState>("grp", 3, 30.0);
    std::vector<Entry> entries;
    std::vector<TensorView> ins;
    for (int m = 0; m < 3; ++m) {
      ins.push_back(device_tensor(job.runtime, {5 + m}, [&](size_t) { return rank + 1.0f; }));
      Entry e;
      e.request.name = "grp." + std::to_string(m);
      e.request.dtype = DataType::kFloat32;
      e.request.shape = ins.back().shape();
      e.request.device = Device::cuda(0);
      e.request.group_key = "grp.0";
      e.request.group_size = 3;
      e.in = e.out = ins.back();
      e.handle = state;
      e.enqueued = Clock::now();
      entries.push_back(std::move(e));
    }
    HORA_RETURN_IF_ERROR(eng.enqueue(std::move(entries)));
    Handle h = detail::HandleAccess::make(state);
    HORA_RETURN_IF_ERROR(h.wait_on_stream(kConsumerStream));
    HORA_RETURN_IF_ERROR(h.wait());
    for (const TensorView& v : ins)
      if (static_cast<const float*>(v.data())[0] != 3.0f)
        return Status::internal("grouped member wrong");
    return Status::OK();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  int consumer_waits = 0;
  for (const auto& w : job.runtime.stream_waits()) consumer_waits += w.stream == kConsumerStream;
  EXPECT_EQ(consumer_waits, 2);
}

// A handle with parts still to come (here one more than the bucket holds) is not published:
// wait_on_stream times out instead of letting the stream run ahead of the missing part.
TEST(DeviceCollectivesEvents, AHandleWithPartsLeftIsNotPublished) {
  Job job(1, false);
  Status s = job.run([&](Engine& eng, int) -> Status {
    auto state = std::make_shared<detail::HandleState>("part", 2, 30.0);
    Entry e;
    e.request.name = "part.0";
    e.request.dtype = DataType::kFloat32;
    e.request.shape = {4};
    e.request.device = Device::cuda(0);
    e.in = e.out = device_tensor(job.runtime, {4}, [](size_t) { return 1.0f; });
    e.handle = state;
    e.enqueued = Clock::now();
    std::vector<Entry> entries;
    entries.push_back(std::move(e));
    HORA_RETURN_IF_ERROR(eng.enqueue(std::move(entries)));
    Handle h = detail::HandleAccess::make(state);
    Status got = h.wait_on_stream(kConsumerStream, std::chrono::milliseconds(300));
    state->complete(Status::OK());  // the missing part
    if (got.code() != StatusCode::kTimeout)
      return Status::internal("unexpected: " + got.to_string());
    return h.wait();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  for (const auto& w : job.runtime.stream_waits()) EXPECT_NE(w.stream, kConsumerStream);
}

}  // namespace
}  // namespace engine
}  // namespace hora
