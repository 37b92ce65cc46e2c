// engine_fusion_bench: what fusion buys through the engine, run under horarun:
//   horarun -np 2 build/benchmarks/engine_fusion_bench [tensors] [bytes_each] [steps] [fused]
// Rank 0 prints, from one run (ratios are what to read on a shared machine):
//  - raw:   one allreduce of tensors x bytes_each straight on the communicator (the selector's
//           algorithm, no engine): the floor;
//  - fused: a training step through the engine: `tensors` named float32 allreduces enqueued
//           back to back, then all waited (steady state: every one a cache hit);
//  - unfused: the same step with HORA_FUSION_THRESHOLD=0 (re-initialised with InitOptions);
//  - overhead: the same step with 4-byte tensors, i.e. the engine's cost per step itself;
//  - idle CPU: the engine's CPU use over 3 s with nothing to do, in % of one core.
// Times are medians over `steps` steps after warm-up. With a fourth argument "fused" only the
// fused steps run (for a profiler: HORA_FUSION_IN_PLACE=0/1 under callgrind compares the data
// paths of the same steps), and rank 0 prints that line.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "collectives/selector.h"
#include "core/context.h"
#include "core/context_access.h"
#include "core/hora.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double us_since(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

bool check(const hora::Status& s, const char* what) {
  if (s.is_ok()) return true;
  std::fprintf(stderr, "%s: %s\n", what, s.to_string().c_str());
  return false;
}

struct StepTimes {
  double step_us = 0;     // enqueue every tensor, then wait for all
  double enqueue_us = 0;  // of which the application thread's enqueues
};

// Median step time of `n` tensors of `elems` floats through the engine.
StepTimes engine_step_us(int n, size_t elems, int steps) {
  std::vector<std::vector<float>> grads(n, std::vector<float>(elems, 1.0f));
  std::vector<hora::Handle> handles(n);
  std::vector<double> times, enqueues;
  for (int s = 0; s < steps + 3; ++s) {
    check(hora::barrier(), "barrier");
    const auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      auto v = hora::TensorView::flat(grads[i].data(), hora::DataType::kFloat32,
                                      static_cast<int64_t>(elems))
                   .value();
      handles[i] =
          hora::allreduce_async("grad." + std::to_string(i), v, v, hora::ReduceOp::kAverage);
    }
    const double enqueue = us_since(t0);
    for (auto& h : handles)
      if (!check(h.wait(), "allreduce")) std::exit(1);
    if (s >= 3) {
      times.push_back(us_since(t0));
      enqueues.push_back(enqueue);
    }
  }
  return {median(times), median(enqueues)};
}

double raw_allreduce_us(size_t elems, int steps) {
  hora::collectives::Communicator& comm = hora::detail::context()->communicator();
  std::vector<float> buf(elems, 1.0f);
  hora::collectives::ScratchPool pool;
  hora::collectives::AlgorithmOptions options;
  options.scratch = &pool;
  std::vector<double> times;
  for (int s = 0; s < steps + 3; ++s) {
    options.deadline = hora::Deadline::after_seconds(120);
    const auto t0 = Clock::now();
    hora::Status st = hora::collectives::run_allreduce(
        hora::collectives::Algorithm::kAuto, comm, buf.data(), buf.data(), elems,
        hora::DataType::kFloat32, hora::ReduceOp::kSum, options);
    if (!check(st, "raw allreduce")) std::exit(1);
    if (s >= 3) times.push_back(us_since(t0));
  }
  return median(times);
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

}  // namespace

int main(int argc, char** argv) {
  const int tensors = argc > 1 ? std::atoi(argv[1]) : 200;
  const size_t bytes_each = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 16ULL * 1024;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 20;
  const bool fused_only = argc > 4 && std::string(argv[4]) == "fused";
  if (tensors <= 0 || bytes_each < 4 || steps <= 0) {
    std::fprintf(stderr, "usage: engine_fusion_bench [tensors>0] [bytes_each>=4] [steps>0]\n");
    return 2;
  }
  const size_t elems = bytes_each / 4;
  if (!check(hora::init(), "init")) return 1;
  const bool root = hora::rank() == 0;
  const int ranks = hora::size();
  // The raw communicator first, with the engine parked (it answers rounds from init on).
  double raw = 0;
  if (!fused_only) {
    if (!check(hora::detail::pause_engine(std::chrono::seconds(60)), "pausing the engine"))
      return 1;
    raw = raw_allreduce_us(elems * tensors, steps);
    hora::detail::resume_engine();
  }
  const StepTimes fused = engine_step_us(tensors, elems, steps);
  if (fused_only) {
    if (root)
      std::printf("engine step, fused: %d ranks, %d x %zu B: %.1f us\n", ranks, tensors, bytes_each,
                  fused.step_us);
    return check(hora::shutdown(), "shutdown") ? 0 : 1;
  }
  const StepTimes overhead = engine_step_us(tensors, 1, steps);
  const double cpu0 = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const double idle_pct = (cpu_seconds() - cpu0) / 3.0 * 100.0;
  const hora::EngineStats stats = hora::engine_stats();
  check(hora::shutdown(), "shutdown");

  hora::InitOptions unfused_options;
  unfused_options.settings = {{"HORA_FUSION_THRESHOLD", "0"}};
  if (!check(hora::init(unfused_options), "init (fusion off)")) return 1;
  const double unfused = engine_step_us(tensors, elems, steps).step_us;
  check(hora::shutdown(), "shutdown");

  if (root) {
    std::printf(
        "engine_fusion_bench: %d ranks, %d float32 tensors x %zu B per step, median of %d steps\n",
        ranks, tensors, bytes_each, steps);
    std::printf("  raw allreduce of %zu B      %10.1f us\n", elems * tensors * 4, raw);
    std::printf("  engine step, fused           %10.1f us  (%.2fx raw)\n", fused.step_us,
                fused.step_us / raw);
    std::printf("  engine step, fusion off      %10.1f us  (%.2fx raw, fusion gains %.2fx)\n",
                unfused, unfused / raw, unfused / fused.step_us);
    std::printf("  engine step, 4 B tensors     %10.1f us  (per-step engine overhead)\n",
                overhead.step_us);
    std::printf("    of which enqueueing        %10.1f us  (%d allreduce_async calls)\n",
                overhead.enqueue_us, tensors);
    std::printf("  idle engine CPU              %10.2f %% of one core\n", idle_pct);
    std::printf("  counters: rounds %lld, cache hits %lld, buckets %lld, fused tensors %lld\n",
                static_cast<long long>(stats.rounds), static_cast<long long>(stats.cache_hits),
                static_cast<long long>(stats.buckets), static_cast<long long>(stats.fused_tensors));
  }
  return 0;
}
