// Allgather, alltoall, reducescatter, compression and the completion event of device tensors
// on a real GPU (exits 77, a CTest skip, where none is usable: tests/support/cuda_test_main.cc):
// the CUDA DeviceRuntime's casts; the engine staged through pinned memory over in-process host
// communicators at N = 1 and 2 (two ranks may share one GPU when staged) and over the real
// NCCL communicator at N = 1 (NCCL refuses two ranks on one GPU). Inputs are written by an
// async copy on a framework stream of their own, enqueued right after; results are read on a
// consumer stream that Handle::wait_on_stream made wait, before the handle is waited on.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "collectives/backends/nccl/nccl_communicator.h"
#include "collectives/rendezvous/memory_store.h"
#include "core/config.h"
#include "core/engine/device_executor.h"
#include "core/engine/engine.h"
#include "core/engine/handle_state.h"
#include "hora/hora.h"
#include "kernels/cuda/cuda_device_runtime.h"
#include "tests/support/engine_entry.h"
#include "tests/support/gpu_engine.h"
#include "tests/support/multi_rank.h"

namespace hora {
namespace engine {
namespace {

std::unique_ptr<DeviceRuntime> cuda() { return kernels::cuda::make_cuda_device_runtime(); }

// `values` in new device memory, copied on `stream` (no host synchronisation). The pinned
// staging copy lives until the process ends (tests are short).
void* upload(DeviceRuntime& rt, DeviceStream stream, const std::vector<float>& values) {
  const size_t bytes = values.size() * sizeof(float);
  void* dev = rt.alloc_device(0, bytes).value();
  if (bytes == 0) return dev;
  void* pinned = rt.alloc_pinned(bytes).value();
  std::memcpy(pinned, values.data(), bytes);
  EXPECT_TRUE(rt.memcpy_async(0, dev, pinned, bytes, stream).ok());
  return dev;
}

// `count` floats at `dev`, read on `stream` (after whatever that stream waits for).
StatusOr<std::vector<float>> download(DeviceRuntime& rt, DeviceStream stream, const void* dev,
                                      size_t count) {
  std::vector<float> out(count);
  if (count == 0) return out;
  HORA_ASSIGN_OR_RETURN(void* pinned, rt.alloc_pinned(count * sizeof(float)));
  HORA_ASSIGN_OR_RETURN(DeviceEvent ev, rt.create_event(0));
  HORA_RETURN_IF_ERROR(rt.memcpy_async(0, pinned, dev, count * sizeof(float), stream));
  HORA_RETURN_IF_ERROR(rt.record_event(0, ev, stream));
  HORA_RETURN_IF_ERROR(rt.wait_event(0, ev, Deadline::after_seconds(30), "download"));
  std::memcpy(out.data(), pinned, count * sizeof(float));
  rt.destroy_event(0, ev);
  rt.free_pinned(pinned);
  return out;
}

TEST(CudaDeviceRuntime, CastsToAndFromHalfTypes) {
  auto rt = cuda();
  ASSERT_GE(rt->device_count(), 1);
  DeviceStream s = rt->create_stream(0).value();
  std::vector<float> values = {0.0f, 1.0f, -2.5f, 65504.0f, 3.0e-5f, 1024.0f};
  void* in = upload(*rt, s, values);
  void* half = rt->alloc_device(0, values.size() * 2).value();
  void* back = rt->alloc_device(0, values.size() * 4).value();
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16}) {
    ASSERT_TRUE(rt->cast_async(0, half, t, in, DataType::kFloat32, values.size(), s).ok());
    ASSERT_TRUE(rt->cast_async(0, back, DataType::kFloat32, half, t, values.size(), s).ok());
    auto got = download(*rt, s, back, values.size());
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ((*got)[i], values[i]) << data_type_name(t);
  }
  Status bad = rt->cast_async(0, back, DataType::kInt32, in, DataType::kFloat32, 1, s);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  rt->free_device(0, in);
  rt->free_device(0, half);
  rt->free_device(0, back);
  rt->destroy_stream(0, s);
}

Config config() {
  Config c;
  c.timeout_s = 60;
  return c;
}

Handle enqueue(Engine& eng, const std::string& name, CollectiveType type, const TensorView& in,
               OutputAllocator allocate = nullptr, std::vector<int64_t> splits = {},
               Compression compression = Compression::kNone) {
  Entry e;
  e.request.name = name;
  e.request.type = type;
  e.request.dtype = in.dtype();
  e.request.shape = in.shape();
  e.request.device = in.device();
  e.request.op = ReduceOp::kSum;
  e.request.compression = compression;
  e.request.splits = std::move(splits);
  e.in = in;
  if (type == CollectiveType::kAllreduce) e.out = in;
  e.allocate = std::move(allocate);
  return test_support::enqueue_entry(eng, std::move(e), 60.0);
}

using test_support::expect_eq;

// One rank's checks on `eng`: allgather, alltoall, reducescatter into cudaMalloc'd outputs
// read on a consumer stream after wait_on_stream, and fp16/bf16-compressed allreduces.
Status run_checks(Engine& eng, DeviceRuntime& rt, int rank, int n) {
  HORA_ASSIGN_OR_RETURN(DeviceStream fw, rt.create_stream(0));
  HORA_ASSIGN_OR_RETURN(DeviceStream consumer, rt.create_stream(0));
  void* out = nullptr;
  OutputAllocator alloc = [&rt, &out](DataType dtype, const std::vector<int64_t>& shape) {
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    out = rt.alloc_device(0, static_cast<size_t>(count) * data_type_bytes(dtype)).value();
    return TensorView::make(out, dtype, shape, Device::cuda(0));
  };
  auto view = [&](void* p, std::vector<int64_t> shape) {
    return TensorView::make(p, DataType::kFloat32, std::move(shape), Device::cuda(0))
        .value()
        .with_stream(fw);
  };

  // Allgather: rank r contributes r+1 rows of 4 holding 100 r + i.
  std::vector<float> mine;
  for (int i = 0; i < 4 * (rank + 1); ++i) mine.push_back(static_cast<float>(100 * rank + i));
  Handle ag = enqueue(eng, "ag", CollectiveType::kAllgather,
                      view(upload(rt, fw, mine), {rank + 1, 4}), alloc);
  HORA_RETURN_IF_ERROR(ag.wait_on_stream(consumer));
  std::vector<float> want;
  for (int q = 0; q < n; ++q)
    for (int i = 0; i < 4 * (q + 1); ++i) want.push_back(static_cast<float>(100 * q + i));
  HORA_ASSIGN_OR_RETURN(std::vector<float> got, download(rt, consumer, out, want.size()));
  HORA_RETURN_IF_ERROR(ag.wait());
  HORA_RETURN_IF_ERROR(expect_eq(got, want, "allgather"));

  // Alltoall: one row of 2 to each rank, holding 10 r + q.
  std::vector<float> rows;
  for (int q = 0; q < n; ++q) rows.insert(rows.end(), 2, static_cast<float>(10 * rank + q));
  Handle a2a = enqueue(eng, "a2a", CollectiveType::kAlltoall, view(upload(rt, fw, rows), {n, 2}),
                       alloc, std::vector<int64_t>(n, 1));
  HORA_RETURN_IF_ERROR(a2a.wait_on_stream(consumer));
  want.clear();
  for (int q = 0; q < n; ++q) want.insert(want.end(), 2, static_cast<float>(10 * q + rank));
  HORA_ASSIGN_OR_RETURN(got, download(rt, consumer, out, want.size()));
  HORA_RETURN_IF_ERROR(a2a.wait());
  HORA_RETURN_IF_ERROR(expect_eq(got, want, "alltoall"));

  // Reducescatter: n rows of 3 holding (r+1) i; rank r gets row r summed.
  std::vector<float> block;
  for (int i = 0; i < 3 * n; ++i) block.push_back(static_cast<float>((rank + 1) * i));
  Handle rs = enqueue(eng, "rs", CollectiveType::kReducescatter,
                      view(upload(rt, fw, block), {n, 3}), alloc);
  HORA_RETURN_IF_ERROR(rs.wait_on_stream(consumer));
  want.clear();
  for (int i = 3 * rank; i < 3 * rank + 3; ++i)
    want.push_back(static_cast<float>(n * (n + 1) / 2 * i));
  HORA_ASSIGN_OR_RETURN(got, download(rt, consumer, out, want.size()));
  HORA_RETURN_IF_ERROR(rs.wait());
  HORA_RETURN_IF_ERROR(expect_eq(got, want, "reducescatter"));

  // Compressed allreduces: small integers survive float16 and bfloat16 exactly.
  for (Compression c : {Compression::kFloat16, Compression::kBFloat16}) {
    std::vector<float> v(1000);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((rank + 1) * (i % 9));
    void* p = upload(rt, fw, v);
    Handle h = enqueue(eng, std::string("c.") + compression_name(c), CollectiveType::kAllreduce,
                       view(p, {1000}), nullptr, {}, c);
    HORA_RETURN_IF_ERROR(h.wait_on_stream(consumer));
    want.clear();
    for (size_t i = 0; i < v.size(); ++i)
      want.push_back(static_cast<float>(n * (n + 1) / 2 * static_cast<int>(i % 9)));
    HORA_ASSIGN_OR_RETURN(got, download(rt, consumer, p, want.size()));
    HORA_RETURN_IF_ERROR(h.wait());
    HORA_RETURN_IF_ERROR(expect_eq(got, want, compression_name(c)));
  }
  rt.destroy_stream(0, consumer);
  rt.destroy_stream(0, fw);
  return Status::OK();
}

class GpuStagedCollectives : public ::testing::TestWithParam<int> {};

TEST_P(GpuStagedCollectives, ThroughPinnedMemoryOverTheHostCommunicator) {
  auto rt = cuda();
  Status s = test_support::run_gpu_engine(
      rt.get(), GetParam(), false, config(),
      [&](Engine& eng, int rank, int size) { return run_checks(eng, *rt, rank, size); });
  ASSERT_TRUE(s.ok()) << s.to_string();
}

INSTANTIATE_TEST_SUITE_P(Ranks, GpuStagedCollectives, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return "n" + std::to_string(i.param);
                         });

TEST(GpuNativeCollectives, OverTheNcclCommunicatorAtOneRank) {
  auto rt = cuda();
  Status s = test_support::run_gpu_engine(
      rt.get(), 1, true, config(),
      [&](Engine& eng, int rank, int size) { return run_checks(eng, *rt, rank, size); });
  ASSERT_TRUE(s.ok()) << s.to_string();
}

}  // namespace
}  // namespace engine
}  // namespace hora
