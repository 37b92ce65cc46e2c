// engine_fusion_bench: what fusion buys through the engine, run under horarun:
//   horarun -np 2 build/benchmarks/engine_fusion_bench [tensors] [bytes_each] [steps]
//   [rounds|fused]
// Rank 0 prints, from one run (ratios are what to read on a shared machine):
//  - raw:   one allreduce of tensors x bytes_each straight on the communicator (the selector's
//           algorithm, no engine): the floor;
//  - spans: the same tensors reduced in place by the communicator's gather-list allreduce
//           (allreduce_spans, the data path of a fused bucket on shared memory), no engine;
//  - fused: a training step through the engine: `tensors` named float32 allreduces enqueued
//           back to back, then all waited (steady state: every one a cache hit); the names
//           and views are made once, as a trainer keeps them, and the names are as long as a
//           model's parameter names ("model.layers.17.weight.grad": on the heap, past
//           std::string's inline capacity), so the step times the engine, not the bench;
//  - overhead: the same step with 4-byte tensors, i.e. the engine's cost per step itself;
//  - unfused: the fused step with HORA_FUSION_THRESHOLD=0 (re-initialised with InitOptions);
//  - idle CPU: the engine's CPU use over 3 s with nothing to do, in % of one core.
// Raw, fused and overhead are measured in `rounds` rounds (default 5), each timing `steps`
// steps of every one in turn, and a round's figures are the medians of its steps; each ratio
// is taken within its round and the median over rounds is printed with the range. A shared
// VM's speed changes for hundreds of ms at a time (the same raw allreduce reads 0.2 or 2 ms),
// so only figures taken side by side compare. With "fused" in place of the rounds only the
// fused steps run (for a profiler: HORA_FUSION_IN_PLACE=0/1 under callgrind compares the data
// paths of the same steps), and rank 0 prints that line.
#include <dirent.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "collectives/selector.h"
#include "core/context.h"
#include "core/context_access.h"
#include "hora/hora.h"

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
  if (s.ok()) return true;
  std::fprintf(stderr, "%s: %s\n", what, s.to_string().c_str());
  return false;
}

// Context switches of this process's threads so far (Linux: /proc/self/task/*/status): how
// often the engine's background thread ("hora-engine") went to sleep, i.e. was woken, and how
// often any thread lost its core to another (involuntary). Figures of the mechanism, steady
// on a machine whose timings are not.
struct Switches {
  long engine_wakeups = 0;
  long preempted = 0;
};

Switches switches() {
  Switches out;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return out;
  while (const dirent* d = readdir(dir)) {
    if (d->d_name[0] == '.') continue;
    const std::string task = std::string("/proc/self/task/") + d->d_name;
    std::ifstream comm(task + "/comm");
    std::string name;
    std::getline(comm, name);
    std::ifstream status(task + "/status");
    std::string line;
    while (std::getline(status, line)) {
      long v = 0;
      if (std::sscanf(line.c_str(), "voluntary_ctxt_switches: %ld", &v) == 1 &&
          name == "hora-engine")
        out.engine_wakeups += v;
      if (std::sscanf(line.c_str(), "nonvoluntary_ctxt_switches: %ld", &v) == 1) out.preempted += v;
    }
  }
  closedir(dir);
  return out;
}

struct StepTimes {
  double step_us = 0;         // enqueue every tensor, then wait for all
  double enqueue_us = 0;      // of which the application thread's enqueues
  double engine_wakeups = 0;  // per step, the background thread's (switches())
  double preempted = 0;       // per step, any thread's involuntary switches
};

// Median step time of `n` tensors of `elems` floats through the engine.
StepTimes engine_step_us(int n, size_t elems, int steps) {
  std::vector<std::vector<float>> grads(n, std::vector<float>(elems, 1.0f));
  // What a trainer keeps from step to step: its gradients' names (as long as a model's
  // parameter names, past std::string's inline capacity) and views.
  std::vector<std::string> names(n);
  std::vector<hora::TensorView> views;
  for (int i = 0; i < n; ++i) {
    names[i] = "model.layers." + std::to_string(i) + ".weight.grad";
    views.push_back(hora::TensorView::flat(grads[i].data(), hora::DataType::kFloat32,
                                           static_cast<int64_t>(elems))
                        .value());
  }
  std::vector<hora::Handle> handles(n);
  std::vector<double> times, enqueues;
  Switches before;
  for (int s = 0; s < steps + 3; ++s) {
    if (s == 3) before = switches();
    check(hora::barrier(), "barrier");
    const auto t0 = Clock::now();
    for (int i = 0; i < n; ++i)
      handles[i] = hora::allreduce_async(names[i], views[i], views[i], hora::ReduceOp::kAverage);
    const double enqueue = us_since(t0);
    for (auto& h : handles)
      if (!check(h.wait(), "allreduce")) std::exit(1);
    if (s >= 3) {
      times.push_back(us_since(t0));
      enqueues.push_back(enqueue);
    }
  }
  const Switches after = switches();
  return {median(times), median(enqueues),
          static_cast<double>(after.engine_wakeups - before.engine_wakeups) / steps,
          static_cast<double>(after.preempted - before.preempted) / steps};
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

// Median time of one gather-list allreduce (Communicator::allreduce_spans: the fused bucket's
// data path on shared memory, no engine) of `n` tensors of `elems` floats, in place; 0 when
// the backend has none.
double raw_spans_us(int n, size_t elems, int steps) {
  hora::collectives::Communicator& comm = hora::detail::context()->communicator();
  if (!comm.has_allreduce_spans()) return 0;
  std::vector<std::vector<float>> grads(n, std::vector<float>(elems, 1.0f));
  std::vector<hora::collectives::ReduceSpan> spans;
  spans.reserve(grads.size());
  for (auto& g : grads) spans.push_back({g.data(), g.data(), elems});
  std::vector<double> times;
  for (int s = 0; s < steps + 3; ++s) {
    const auto t0 = Clock::now();
    hora::Status st =
        comm.allreduce_spans(spans, hora::DataType::kFloat32, hora::ReduceOp::kAverage, 1.0, 1.0,
                             hora::Deadline::after_seconds(120));
    if (!check(st, "raw allreduce_spans")) std::exit(1);
    if (s >= 3) times.push_back(us_since(t0));
  }
  return median(times);
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// Median and range of one figure over the rounds.
struct Spread {
  double median = 0, lo = 0, hi = 0;
};

Spread spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

struct Round {
  double raw_us = 0;
  double spans_us = 0;
  StepTimes fused, overhead;
};

// The command line: [tensors] [bytes_each] [steps] [rounds|fused].
struct Args {
  int tensors = 200;
  size_t bytes_each = 16ULL * 1024;
  int steps = 20;
  bool fused_only = false;
  int rounds = 5;
  size_t elems() const { return bytes_each / 4; }
};

bool parse_args(int argc, char** argv, Args* args) {
  args->tensors = argc > 1 ? std::atoi(argv[1]) : 200;
  args->bytes_each = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 16ULL * 1024;
  args->steps = argc > 3 ? std::atoi(argv[3]) : 20;
  args->fused_only = argc > 4 && std::string(argv[4]) == "fused";
  args->rounds = argc > 4 && !args->fused_only ? std::atoi(argv[4]) : 5;
  return args->tensors > 0 && args->bytes_each >= 4 && args->steps > 0 && args->rounds > 0;
}

// `fused`: one fused engine step and the engine's counters.
int run_fused_only(const Args& a) {
  const StepTimes fused = engine_step_us(a.tensors, a.elems(), a.steps);
  const hora::EngineStats stats = hora::engine_stats();
  if (hora::rank() == 0)
    std::printf(
        "engine step, fused: %d ranks, %d x %zu B: %.1f us (%lld of %lld rounds "
        "repeated the step before)\n",
        hora::size(), a.tensors, a.bytes_each, fused.step_us,
        static_cast<long long>(stats.repeated_steps), static_cast<long long>(stats.rounds));
  return check(hora::shutdown(), "shutdown") ? 0 : 1;
}

// The rounds: raw allreduce and spans with the engine parked, then the engine's fused and
// 4-byte steps. False when the engine could not be parked.
bool measure_rounds(const Args& a, std::vector<Round>* measured) {
  for (int r = 0; r < a.rounds; ++r) {
    Round round;
    // The raw communicator with the engine parked (it answers rounds from init on).
    if (!check(hora::detail::pause_engine(std::chrono::seconds(60)), "pausing the engine"))
      return false;
    round.raw_us = raw_allreduce_us(a.elems() * a.tensors, a.steps);
    round.spans_us = raw_spans_us(a.tensors, a.elems(), a.steps);
    hora::detail::resume_engine();
    round.fused = engine_step_us(a.tensors, a.elems(), a.steps);
    round.overhead = engine_step_us(a.tensors, 1, a.steps);
    measured->push_back(round);
  }
  return true;
}

// What is measured once, after the rounds.
struct AfterRounds {
  double idle_pct = 0;  // the idle engine's CPU, % of one core
  hora::EngineStats stats;
  double unfused_us = 0;  // an engine step with fusion off
};

// Rank 0's report: the medians over the rounds [range].
void print_report(const Args& a, int ranks, const std::vector<Round>& measured,
                  const AfterRounds& after) {
  std::vector<double> raw, spans, fused, ratio, overhead, enqueue, wakeups, preempted;
  for (const Round& r : measured) {
    raw.push_back(r.raw_us);
    spans.push_back(r.spans_us);
    fused.push_back(r.fused.step_us);
    ratio.push_back(r.fused.step_us / r.raw_us);
    overhead.push_back(r.overhead.step_us);
    enqueue.push_back(r.overhead.enqueue_us);
    wakeups.push_back(r.fused.engine_wakeups);
    preempted.push_back(r.fused.preempted);
  }
  const Spread sr = spread(raw), ss = spread(spans), sf = spread(fused), sx = spread(ratio),
               so = spread(overhead), se = spread(enqueue);
  std::printf(
      "engine_fusion_bench: %d ranks, %d float32 tensors x %zu B per step, %d rounds of %d "
      "steps each; medians over the rounds [range]\n",
      ranks, a.tensors, a.bytes_each, a.rounds, a.steps);
  std::printf("  raw allreduce of %zu B      %10.1f us  [%.1f - %.1f]\n", a.elems() * a.tensors * 4,
              sr.median, sr.lo, sr.hi);
  if (ss.median > 0)
    std::printf(
        "  raw, the %d tensors in place  %9.1f us  [%.1f - %.1f] (allreduce_spans: the "
        "fused data path without the engine)\n",
        a.tensors, ss.median, ss.lo, ss.hi);
  std::printf("  engine step, fused           %10.1f us  [%.1f - %.1f]\n", sf.median, sf.lo, sf.hi);
  std::printf("    fused over raw, per round  %10.2fx    [%.2f - %.2f]\n", sx.median, sx.lo, sx.hi);
  const Spread sw = spread(wakeups), sp = spread(preempted);
  std::printf(
      "    per fused step: background thread woken %.2f [%.2f - %.2f], threads "
      "preempted %.2f [%.2f - %.2f] times\n",
      sw.median, sw.lo, sw.hi, sp.median, sp.lo, sp.hi);
  std::printf(
      "  engine step, 4 B tensors     %10.1f us  [%.1f - %.1f] (per-step engine overhead)\n",
      so.median, so.lo, so.hi);
  std::printf(
      "    of which enqueueing        %10.1f us  [%.1f - %.1f] (%d allreduce_async calls)\n",
      se.median, se.lo, se.hi, a.tensors);
  std::printf(
      "  engine step, fusion off      %10.1f us  (after the rounds, re-initialised; "
      "fusion gains %.2fx over the median fused step)\n",
      after.unfused_us, after.unfused_us / sf.median);
  std::printf("  idle engine CPU              %10.2f %% of one core\n", after.idle_pct);
  const hora::EngineStats& stats = after.stats;
  std::printf(
      "  counters: rounds %lld, cache hits %lld, repeated steps %lld, buckets %lld, fused "
      "tensors %lld\n",
      static_cast<long long>(stats.rounds), static_cast<long long>(stats.cache_hits),
      static_cast<long long>(stats.repeated_steps), static_cast<long long>(stats.buckets),
      static_cast<long long>(stats.fused_tensors));
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse_args(argc, argv, &a)) {
    std::fprintf(stderr,
                 "usage: engine_fusion_bench [tensors>0] [bytes_each>=4] [steps>0] "
                 "[rounds>0|fused]\n");
    return 2;
  }
  if (!check(hora::init(), "init")) return 1;
  const bool root = hora::rank() == 0;
  const int ranks = hora::size();
  if (a.fused_only) return run_fused_only(a);
  std::vector<Round> measured;
  if (!measure_rounds(a, &measured)) return 1;
  AfterRounds after;
  const double cpu0 = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  after.idle_pct = (cpu_seconds() - cpu0) / 3.0 * 100.0;
  after.stats = hora::engine_stats();
  check(hora::shutdown(), "shutdown");

  hora::InitOptions unfused_options;
  unfused_options.settings = {{"HORA_FUSION_THRESHOLD", "0"}};
  if (!check(hora::init(unfused_options), "init (fusion off)")) return 1;
  after.unfused_us = engine_step_us(a.tensors, a.elems(), a.steps).step_us;
  check(hora::shutdown(), "shutdown");
  if (root) print_report(a, ranks, measured, after);
  return 0;
}
