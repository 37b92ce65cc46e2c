// autotune_bench: HORA_AUTOTUNE=1 against a sweep of hand-set configurations, in one run:
//   horarun -np 2 build/benchmarks/autotune_bench [tensors] [bytes_each] [budget] [reps]
// A step is `tensors` float32 allreduces of `bytes_each` enqueued back to back, then all waited
// (engine_fusion_bench's step, 200 x 16 KiB by default). Each rep re-initialises hora
// (InitOptions) once per configuration and alternates:
//  - the sweep: each hand-set configuration (fusion threshold, cycle time, response cache),
//    its median step over kMeasureSteps steps after kWarmSteps;
//  - the tuned runs: HORA_AUTOTUNE=1 (every knob free, HORA_AUTOTUNE_FREE) starting from the
//    defaults, from a 64 KiB fusion threshold and from fusion off; `budget` steps (default
//    300) are run first, then the median of kMeasureSteps steps under what was tuned.
// Rank 0 prints each figure as the median over the reps, each tuned run's ratio to the best
// hand-set configuration of the same rep (median over reps), the step the search converged
// at, and the values it chose.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "hora/hora.h"

namespace {

using Clock = std::chrono::steady_clock;
using Settings = std::vector<std::pair<std::string, std::string>>;

constexpr int kWarmSteps = 10;
constexpr int kMeasureSteps = 200;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

bool check(const hora::Status& s, const char* what) {
  if (s.ok()) return true;
  std::fprintf(stderr, "%s: %s\n", what, s.to_string().c_str());
  return false;
}

struct Step {
  std::vector<std::string> names;
  std::vector<std::vector<float>> data;
  std::vector<hora::Handle> handles;
  Step(int tensors, size_t elems) {
    for (int t = 0; t < tensors; ++t) {
      names.push_back("model.layers." + std::to_string(t) + ".weight.grad");
      data.emplace_back(elems, 1.0f);
    }
    handles.reserve(static_cast<size_t>(tensors));
  }
  // One step's wall time in us, or a negative figure on failure.
  double run() {
    const auto t0 = Clock::now();
    handles.clear();
    for (size_t t = 0; t < names.size(); ++t) {
      auto v = hora::TensorView::flat(data[t].data(), hora::DataType::kFloat32,
                                      static_cast<int64_t>(data[t].size()))
                   .value();
      handles.push_back(hora::allreduce_async(names[t], v, v, hora::ReduceOp::kAverage));
    }
    for (hora::Handle& h : handles)
      if (!check(h.wait(), "allreduce")) return -1;
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  }
  // The median of `n` steps (negative on failure).
  double median_of(int n) {
    std::vector<double> us;
    for (int i = 0; i < n; ++i) {
      const double s = run();
      if (s < 0) return -1;
      us.push_back(s);
    }
    return median(us);
  }
};

struct Config {
  std::string label;
  Settings settings;
};

std::vector<Config> sweep() {
  std::vector<Config> out;
  for (const char* f : {"0", "65536", "262144", "1048576", "4194304", "67108864"})
    out.push_back({std::string("fusion ") + f, {{"HORA_FUSION_THRESHOLD", f}}});
  out.push_back({"fusion 67108864, cycle 0.1 ms",
                 {{"HORA_FUSION_THRESHOLD", "67108864"}, {"HORA_CYCLE_TIME_MS", "0.1"}}});
  out.push_back({"fusion 67108864, cycle 5 ms",
                 {{"HORA_FUSION_THRESHOLD", "67108864"}, {"HORA_CYCLE_TIME_MS", "5"}}});
  out.push_back({"fusion 67108864, cache off",
                 {{"HORA_FUSION_THRESHOLD", "67108864"}, {"HORA_CACHE_CAPACITY", "0"}}});
  out.push_back({"fusion 1048576, cache off",
                 {{"HORA_FUSION_THRESHOLD", "1048576"}, {"HORA_CACHE_CAPACITY", "0"}}});
  return out;
}

std::vector<Config> tuned_starts() {
  const Settings tune = {{"HORA_AUTOTUNE", "1"},
                         {"HORA_AUTOTUNE_FREE", "fusion_threshold,cycle_time,cache"}};
  Settings from64k = tune, off = tune;
  from64k.push_back({"HORA_FUSION_THRESHOLD", "65536"});
  off.push_back({"HORA_FUSION_THRESHOLD", "0"});
  return {{"defaults", tune}, {"fusion 64 KiB", from64k}, {"fusion off", off}};
}

int g_rank = 0;  // this process's rank and the job's size (hora is shut down between runs)
int g_size = 0;

struct Tuned {
  double us = -1;
  hora::AutotuneState state;
};

// One configuration: init, `budget` steps (tuned runs), then the measured steps; shutdown.
Tuned measure(const Settings& settings, int budget, Step& step) {
  hora::InitOptions o;
  o.settings = settings;
  Tuned t;
  if (!check(hora::init(o), "init")) return t;
  g_rank = hora::rank();
  g_size = hora::size();
  if (step.median_of(std::max(kWarmSteps, budget)) >= 0) {
    t.state = hora::autotune_state();
    t.us = step.median_of(kMeasureSteps);
  }
  if (!check(hora::shutdown(), "shutdown")) t.us = -1;
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const int tensors = argc > 1 ? std::atoi(argv[1]) : 200;
  const size_t bytes_each = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 16384;
  const int budget = argc > 3 ? std::atoi(argv[3]) : 300;
  const int reps = argc > 4 ? std::atoi(argv[4]) : 3;
  if (tensors <= 0 || bytes_each < 4 || budget <= 0 || reps <= 0) {
    std::fprintf(stderr, "usage: autotune_bench [tensors>0] [bytes_each>=4] [budget>0] [reps>0]\n");
    return 2;
  }
  Step step(tensors, bytes_each / 4);
  const std::vector<Config> hand = sweep(), starts = tuned_starts();
  std::map<std::string, std::vector<double>> us, ratio;
  std::map<std::string, std::vector<hora::AutotuneState>> states;
  for (int r = 0; r < reps; ++r) {
    double best = 0;
    for (const Config& c : hand) {
      const Tuned t = measure(c.settings, kWarmSteps, step);
      if (t.us < 0) return 1;
      us[c.label].push_back(t.us);
      best = best == 0 ? t.us : std::min(best, t.us);
    }
    us["best hand-set"].push_back(best);
    for (const Config& c : starts) {
      const Tuned t = measure(c.settings, budget, step);
      if (t.us < 0) return 1;
      us["tuned from " + c.label].push_back(t.us);
      ratio[c.label].push_back(best / t.us);
      states[c.label].push_back(t.state);
    }
  }
  if (g_rank != 0) return 0;
  std::printf(
      "autotune_bench: %d ranks, %d float32 tensors x %zu B per step, budget %d steps, %d reps; "
      "medians over the reps\n",
      g_size, tensors, bytes_each, budget, reps);
  for (const Config& c : hand)
    std::printf("  hand-set %-32s %10.1f us\n", c.label.c_str(), median(us[c.label]));
  std::printf("  best hand-set per rep %24s %10.1f us\n", "", median(us["best hand-set"]));
  for (const Config& c : starts) {
    const hora::AutotuneState& s = states[c.label].back();
    std::printf(
        "  tuned from %-30s %10.1f us  best/tuned %.3f [%.3f - %.3f]; converged %d at step "
        "%lld of %d; last rep chose fusion %lld B, cycle %.3g ms, cache %s\n",
        c.label.c_str(), median(us["tuned from " + c.label]), median(ratio[c.label]),
        *std::min_element(ratio[c.label].begin(), ratio[c.label].end()),
        *std::max_element(ratio[c.label].begin(), ratio[c.label].end()), s.converged ? 1 : 0,
        static_cast<long long>(s.history.empty() ? 0 : s.history.back().step), budget,
        static_cast<long long>(s.fusion_threshold_bytes), s.cycle_time_ms,
        s.cache_enabled ? "on" : "off");
  }
  return 0;
}
