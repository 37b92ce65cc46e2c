// device_engine_bench --fake-device: the host-side cost of the engine's device path without a
// GPU. The engine runs on FakeDeviceRuntime and FakeNcclCommunicator (tests/support), whose
// calls spin for configured latencies (a kernel launch, an event record or query, a copy, an
// NCCL enqueue) and whose streams run each kernel, copy and collective for a configured device
// time, so what is timed is the engine's host-side critical path as on a GPU. Two engines alternate
// in each round, in one process:
//   host waits  the path before the finalizer (EngineOptions::device_host_waits): the host
//               waits for the pack, a blocking NCCL allreduce, one rank runs the collective
//               too, and the engine's thread waits for each bucket before it goes on;
//   finalizer   the engine's thread only enqueues (the collective on its stream) and the
//               DeviceFinalizer completes the handles.
// Per configuration: a step of --tensors float32 device tensors of --floats elements,
// enqueued back to back and then all waited (every one a cache hit after the first step),
// and a lone tensor's enqueue-to-completion, each the median over the round, at every rank
// count of --ranks (in-process ranks). Prints one line per figure; the medians of the rounds'
// medians and their ratios close the output.
//
// Usage: device_engine_bench --fake-device [--ranks 1,2] [--tensors 200] [--floats 64]
//          [--launch-us 5] [--event-us 2] [--copy-us 5] [--nccl-us 10] [--kernel-us 3]
//          [--nccl-device-us 8] [--steps 30] [--rounds 3]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/engine/engine.h"
#include "tests/support/engine_entry.h"
#include "tests/support/fake_device_runtime.h"
#include "tests/support/fake_nccl_communicator.h"
#include "tests/support/inproc_communicator.h"
#include "tests/support/multi_rank.h"

namespace hora {
namespace {

using engine::Engine;
using engine::Entry;
using test_support::FakeDeviceRuntime;
using test_support::FakeNcclCommunicator;
using Us = std::chrono::duration<double, std::micro>;

struct Options {
  std::vector<int> ranks = {1, 2};
  int tensors = 200;
  int floats = 64;
  double launch_us = 5, event_us = 2, copy_us = 5, nccl_us = 10;
  double kernel_us = 3, nccl_device_us = 8;  // device time of a kernel or copy, of NCCL's
  int steps = 30;
  int rounds = 3;
};

bool parse(int argc, char** argv, Options* o) {
  bool fake = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--fake-device") {
      fake = true;
    } else if (a == "--ranks" && (v = next())) {
      o->ranks.clear();
      for (const char* p = v; *p;) {
        o->ranks.push_back(std::atoi(p));
        while (*p && *p != ',') ++p;
        if (*p == ',') ++p;
      }
    } else if (a == "--tensors" && (v = next())) {
      o->tensors = std::atoi(v);
    } else if (a == "--floats" && (v = next())) {
      o->floats = std::atoi(v);
    } else if (a == "--launch-us" && (v = next())) {
      o->launch_us = std::atof(v);
    } else if (a == "--event-us" && (v = next())) {
      o->event_us = std::atof(v);
    } else if (a == "--copy-us" && (v = next())) {
      o->copy_us = std::atof(v);
    } else if (a == "--nccl-us" && (v = next())) {
      o->nccl_us = std::atof(v);
    } else if (a == "--kernel-us" && (v = next())) {
      o->kernel_us = std::atof(v);
    } else if (a == "--nccl-device-us" && (v = next())) {
      o->nccl_device_us = std::atof(v);
    } else if (a == "--steps" && (v = next())) {
      o->steps = std::atoi(v);
    } else if (a == "--rounds" && (v = next())) {
      o->rounds = std::atoi(v);
    } else {
      std::fprintf(stderr, "device_engine_bench: unknown or incomplete argument '%s'\n", a.c_str());
      return false;
    }
  }
  if (!fake) {
    std::fprintf(stderr,
                 "device_engine_bench: only --fake-device is implemented (on a GPU, "
                 "device_engine_gpu_test times the fused step)\n");
    return false;
  }
  for (int n : o->ranks)
    if (n < 1) return false;
  return o->tensors > 0 && o->floats > 0 && o->steps > 0 && o->rounds > 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

Handle enqueue(Engine& eng, const std::string& name, float* data, int floats) {
  Entry e;
  e.request.name = name;
  e.request.type = engine::CollectiveType::kAllreduce;
  e.request.dtype = DataType::kFloat32;
  e.request.shape = {floats};
  e.request.device = Device::cuda(0);
  e.in = TensorView::flat(data, DataType::kFloat32, floats, Device::cuda(0))
             .value()
             .with_stream(reinterpret_cast<void*>(0x1000));
  e.out = e.in;
  return test_support::enqueue_entry(eng, std::move(e), 60.0);
}

struct Figures {
  double step_us = 0;
  double enqueue_us = 0;  // of the step: until the last enqueue returned
  double lone_us = 0;
};

// One engine (host waits or finalizer) on rank `host`: warm-up, the timed steps, the lone calls.
StatusOr<Figures> run_engine(collectives::Communicator& host, FakeDeviceRuntime& rt,
                             FakeNcclCommunicator& nccl, const Options& o, bool host_waits,
                             const std::vector<float*>& tensors) {
  engine::DeviceResources res;
  res.runtime = &rt;
  res.device_comm = &nccl;
  res.support.mode = engine::DeviceMode::kNative;
  res.support.device = 0;
  res.support.why_none.clear();
  Config c;
  c.timeout_s = 60;
  engine::EngineOptions eo = engine_options_from(c);
  eo.device_host_waits = host_waits;
  Engine eng(host, eo, nullptr, "", nullptr, &res);
  std::vector<Handle> handles(tensors.size());
  std::vector<std::string> names;
  names.reserve(tensors.size());
  for (size_t t = 0; t < tensors.size(); ++t) names.push_back("grad." + std::to_string(t));
  Figures f;
  std::vector<double> steps, enqueues, lone;
  for (int i = 0; i < o.steps + 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t t = 0; t < tensors.size(); ++t)
      handles[t] = enqueue(eng, names[t], tensors[t], o.floats);
    const auto t1 = std::chrono::steady_clock::now();
    for (Handle& h : handles) HORA_RETURN_IF_ERROR(h.wait());
    if (i < 3) continue;
    steps.push_back(Us(std::chrono::steady_clock::now() - t0).count());
    enqueues.push_back(Us(t1 - t0).count());
  }
  for (int i = 0; i < o.steps * 4 + 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    HORA_RETURN_IF_ERROR(enqueue(eng, "lone", tensors[0], o.floats).wait());
    if (i >= 3) lone.push_back(Us(std::chrono::steady_clock::now() - t0).count());
  }
  f.step_us = median(steps);
  f.enqueue_us = median(enqueues);
  f.lone_us = median(lone);
  HORA_RETURN_IF_ERROR(eng.stop());
  return f;
}

int run(const Options& o) {
  std::printf(
      "device_engine_bench: fake device (host: launch %.1f us, event %.1f us, copy %.1f us, nccl "
      "enqueue %.1f us; device: kernel %.1f us, nccl %.1f us), %d float32 tensors x %d B, median "
      "of %d steps, %d rounds\n",
      o.launch_us, o.event_us, o.copy_us, o.nccl_us, o.kernel_us, o.nccl_device_us, o.tensors,
      o.floats * 4, o.steps, o.rounds);
  std::map<std::string, std::vector<double>> all;  // "<figure> <mode> np<N>" -> per round
  for (int round = 0; round < o.rounds; ++round) {
    for (int n : o.ranks) {
      FakeDeviceRuntime rt(1);
      test_support::FakeLatencies lat;
      lat.launch_ns = static_cast<int64_t>(o.launch_us * 1000);
      lat.event_record_ns = lat.event_query_ns = lat.event_sync_ns =
          static_cast<int64_t>(o.event_us * 1000);
      lat.copy_ns = static_cast<int64_t>(o.copy_us * 1000);
      lat.kernel_ns = static_cast<int64_t>(o.kernel_us * 1000);
      rt.set_latencies(lat);
      rt.set_logging(false);
      test_support::InProcWorld device_world(n);
      std::vector<std::unique_ptr<FakeNcclCommunicator>> nccl;
      nccl.reserve(n);
      for (int r = 0; r < n; ++r) {
        nccl.push_back(std::make_unique<FakeNcclCommunicator>(device_world.communicator(r), &rt));
        nccl.back()->launch_ns = static_cast<int64_t>(o.nccl_us * 1000);
        nccl.back()->sync_ns = static_cast<int64_t>(2 * o.event_us * 1000);
        nccl.back()->device_ns = static_cast<int64_t>(o.nccl_device_us * 1000);
      }
      std::vector<Figures> waits(n), fin(n);
      Status s = test_support::run_ranks(n, [&](collectives::Communicator& host) -> Status {
        const int r = host.rank();
        std::vector<float*> tensors;
        tensors.reserve(o.tensors);
        for (int t = 0; t < o.tensors; ++t)
          tensors.push_back(static_cast<float*>(rt.tensor_memory(o.floats * sizeof(float))));
        HORA_ASSIGN_OR_RETURN(waits[r], run_engine(host, rt, *nccl[r], o, true, tensors));
        HORA_ASSIGN_OR_RETURN(fin[r], run_engine(host, rt, *nccl[r], o, false, tensors));
        return Status::OK();
      });
      if (!s.ok()) {
        std::fprintf(stderr, "device_engine_bench: %s\n", s.to_string().c_str());
        return 1;
      }
      const std::string np = " np" + std::to_string(n);
      std::printf(
          "round %d, %d rank(s): step %.1f us (host waits) / %.1f us (finalizer), of "
          "which enqueueing %.1f / %.1f us; lone tensor %.1f us / %.1f us\n",
          round + 1, n, waits[0].step_us, fin[0].step_us, waits[0].enqueue_us, fin[0].enqueue_us,
          waits[0].lone_us, fin[0].lone_us);
      all["enqueue host_waits" + np].push_back(waits[0].enqueue_us);
      all["enqueue finalizer" + np].push_back(fin[0].enqueue_us);
      all["step host_waits" + np].push_back(waits[0].step_us);
      all["step finalizer" + np].push_back(fin[0].step_us);
      all["lone host_waits" + np].push_back(waits[0].lone_us);
      all["lone finalizer" + np].push_back(fin[0].lone_us);
      all["step ratio" + np].push_back(waits[0].step_us / fin[0].step_us);
      all["lone ratio" + np].push_back(waits[0].lone_us / fin[0].lone_us);
    }
  }
  for (int n : o.ranks) {
    const std::string np = " np" + std::to_string(n);
    std::printf("ranks %d: step of %d, host waits %.1f us\n", n, o.tensors,
                median(all["step host_waits" + np]));
    std::printf("ranks %d: step of %d, finalizer %.1f us\n", n, o.tensors,
                median(all["step finalizer" + np]));
    std::printf("ranks %d: step's enqueueing, host waits %.1f us\n", n,
                median(all["enqueue host_waits" + np]));
    std::printf("ranks %d: step's enqueueing, finalizer %.1f us\n", n,
                median(all["enqueue finalizer" + np]));
    std::printf("ranks %d: step, host waits over finalizer %.2f x\n", n,
                median(all["step ratio" + np]));
    std::printf("ranks %d: lone tensor, host waits %.1f us\n", n,
                median(all["lone host_waits" + np]));
    std::printf("ranks %d: lone tensor, finalizer %.1f us\n", n,
                median(all["lone finalizer" + np]));
    std::printf("ranks %d: lone tensor, host waits over finalizer %.2f x\n", n,
                median(all["lone ratio" + np]));
  }
  return 0;
}

}  // namespace
}  // namespace hora

int main(int argc, char** argv) {
  hora::Options o;
  if (!hora::parse(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: device_engine_bench --fake-device [--ranks 1,2] [--tensors 200] "
                 "[--floats 64] [--launch-us 5] [--event-us 2] [--copy-us 5] [--nccl-us 10] "
                 "[--kernel-us 3] [--nccl-device-us 8] [--steps 30] [--rounds 3]\n");
    return 2;
  }
  return hora::run(o);
}
