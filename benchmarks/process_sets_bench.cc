// process_sets_bench: what process sets cost and what running them side by side buys, under
// horarun:
//   horarun -np 2 build/benchmarks/process_sets_bench     # the baseline: the whole job
//   horarun -np 4 build/benchmarks/process_sets_bench     # two sets of two: {0,1} and {2,3}
// Rank 0 prints "process_sets_bench: <key> <value>" lines:
//  - small_us: the median time of a blocking 4-byte allreduce (through the engine) on the
//    global set at 2 ranks, or on set {0,1} at 4 ranks while set {2,3} idles;
//  - (4 ranks) sequential_ms: set {0,1} runs `iters` 16 MiB allreduces while {2,3} waits, then
//    the other way round; concurrent_ms: both sets run theirs at once; ratio: concurrent over
//    sequential (1.0: no gain from running them side by side, 0.5: perfect overlap);
//    sequential_cores / concurrent_cores: the job's CPU time over the wall time of each, the
//    cores it kept busy (on a machine with as many cores as one set has ranks, the sets take
//    turns on the same cores, which bounds the ratio near 1.0).
// Both figures are medians over `rounds` rounds (default 5) of each measurement in turn, so
// sequential and concurrent are taken side by side on a shared machine.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hora/hora.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

void check(const hora::Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "process_sets_bench: %s: %s\n", what, s.to_string().c_str());
  std::exit(1);
}

// The median time of `iters` blocking 4-byte allreduces on `set`, in microseconds.
double small_us(int set, int iters) {
  float x = 1.0f;
  auto view = hora::TensorView::flat(&x, hora::DataType::kFloat32, 1).value();
  hora::AllreduceOptions options;
  options.op = hora::ReduceOp::kSum;
  options.process_set = set;
  std::vector<double> us;
  for (int i = 0; i < iters + iters / 10; ++i) {
    const auto t0 = Clock::now();
    check(hora::allreduce("small", view, view, options), "small allreduce");
    if (i >= iters / 10)
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  return median(us);
}

// `iters` 16 MiB allreduces on `set` (a warm buffer).
void large(int set, std::vector<float>& buffer, int iters) {
  auto view = hora::TensorView::flat(buffer.data(), hora::DataType::kFloat32,
                                     static_cast<int64_t>(buffer.size()))
                  .value();
  hora::AllreduceOptions options;
  options.process_set = set;
  for (int i = 0; i < iters; ++i) check(hora::allreduce("large", view, view, options), "large");
}

// This process's CPU time (every thread), in seconds.
double cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct Timing {
  double ms = 0.0;     // wall, barrier to barrier
  double cores = 0.0;  // the job's CPU time over the wall time: the cores kept busy
};

// The job-wide time (barrier to barrier) of `body`, and the cores the job kept busy.
template <typename Body>
Timing timed(Body body) {
  check(hora::barrier(), "barrier");
  const double cpu0 = cpu_s();
  const auto t0 = Clock::now();
  body();
  check(hora::barrier(), "barrier");
  Timing t;
  t.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  double cpu = cpu_s() - cpu0;
  auto view = hora::TensorView::flat(&cpu, hora::DataType::kFloat64, 1).value();
  check(hora::allreduce("cpu", view, view, hora::ReduceOp::kSum), "cpu allreduce");
  t.cores = cpu / (t.ms / 1000.0);
  return t;
}

void two_sets(int rounds, int iters) {
  const int me = hora::rank();
  const int mine = me < 2 ? 1 : 2;  // ids of {0,1} and {2,3}
  std::vector<float> buffer(size_t{4} << 20, 1.0f);
  large(mine, buffer, 2);  // warm-up: pages touched, caches sized
  std::vector<double> small, seq, conc, ratio, seq_cores, conc_cores;
  for (int r = 0; r < rounds; ++r) {
    if (mine == 1) small.push_back(small_us(1, 2000));
    check(hora::barrier(), "barrier");
    const Timing s = timed([&] {
      if (mine == 1) large(1, buffer, iters);
      check(hora::barrier(), "barrier");
      if (mine == 2) large(2, buffer, iters);
    });
    const Timing c = timed([&] { large(mine, buffer, iters); });
    seq.push_back(s.ms);
    conc.push_back(c.ms);
    ratio.push_back(c.ms / s.ms);
    seq_cores.push_back(s.cores);
    conc_cores.push_back(c.cores);
  }
  if (me == 0) {
    std::printf("process_sets_bench: ranks 4\n");
    std::printf("process_sets_bench: small_us %.2f\n", median(small));
    std::printf("process_sets_bench: sequential_ms %.1f\n", median(seq));
    std::printf("process_sets_bench: concurrent_ms %.1f\n", median(conc));
    std::printf("process_sets_bench: ratio %.3f\n", median(ratio));
    std::printf("process_sets_bench: sequential_cores %.2f\n", median(seq_cores));
    std::printf("process_sets_bench: concurrent_cores %.2f\n", median(conc_cores));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 10;
  hora::InitOptions options;
  options.dynamic_process_sets = true;
  check(hora::init(options), "init");
  if (hora::size() == 4) {
    check(hora::add_process_set({0, 1}).status(), "add_process_set {0, 1}");  // id 1
    check(hora::add_process_set({2, 3}).status(), "add_process_set {2, 3}");  // id 2
    two_sets(rounds, iters);
  } else if (hora::size() == 2) {
    std::vector<double> small;
    small.reserve(static_cast<size_t>(std::max(rounds, 0)));
    for (int r = 0; r < rounds; ++r) small.push_back(small_us(hora::kGlobalProcessSet, 2000));
    if (hora::rank() == 0) {
      std::printf("process_sets_bench: ranks 2\n");
      std::printf("process_sets_bench: small_us %.2f\n", median(small));
    }
  } else {
    std::fprintf(stderr, "process_sets_bench: run it under horarun -np 2 or -np 4\n");
    return 2;
  }
  check(hora::shutdown(), "shutdown");
  return 0;
}
