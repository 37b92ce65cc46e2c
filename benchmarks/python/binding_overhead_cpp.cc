// binding_overhead_cpp: the C++ half of benchmarks/python/binding_overhead.sh. Under horarun it
// measures, through the engine from C++:
//  - small: allreduce_async + wait of one 4-byte float32 tensor, per call;
//  - reducer: one step of `tensors` gradients of `bytes_each` bytes through the GradientReducer
//    (gradient_ready for each, then synchronize), the path every DistributedOptimizer takes.
// binding_overhead.py measures the same from Python; the script prints both and the ratios.
//   horarun -np 2 binding_overhead_cpp [iters] [tensors] [bytes_each] [steps]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hora/gradient_reducer.h"
#include "hora/hora.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

double us_since(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

int fail(const hora::Status& s, const char* what) {
  std::fprintf(stderr, "binding_overhead_cpp: %s: %s\n", what, s.to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int tensors = argc > 2 ? std::atoi(argv[2]) : 200;
  const int bytes_each = argc > 3 ? std::atoi(argv[3]) : 16384;
  const int steps = argc > 4 ? std::atoi(argv[4]) : 50;
  if (iters < 1 || tensors < 1 || bytes_each < 4 || steps < 1) {
    std::fprintf(stderr,
                 "usage: binding_overhead_cpp [iters>=1] [tensors>=1] "
                 "[bytes_each>=4] [steps>=1]\n");
    return 2;
  }
  hora::Status s = hora::init();
  if (!s.ok()) return fail(s, "init");

  float one = 1.0f;
  auto small = hora::TensorView::flat(&one, hora::DataType::kFloat32, 1).value();
  std::vector<double> calls;
  for (int i = 0; i < iters + iters / 10; ++i) {
    const auto t0 = Clock::now();
    s = hora::allreduce_async("small", small, small, hora::ReduceOp::kSum).wait();
    if (!s.ok()) return fail(s, "small allreduce");
    if (i >= iters / 10) calls.push_back(us_since(t0));
  }

  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(tensors));
  for (int i = 0; i < tensors; ++i) names.push_back("layer" + std::to_string(i));
  auto reducer = hora::GradientReducer::create(names, {}).value();
  const size_t elems = static_cast<size_t>(bytes_each) / 4;
  std::vector<std::vector<float>> grads(tensors, std::vector<float>(elems, 1.0f));
  std::vector<double> step_times;
  for (int step = 0; step < steps + 5; ++step) {
    const auto t0 = Clock::now();
    for (int i = 0; i < tensors; ++i) {
      auto v = hora::TensorView::flat(grads[i].data(), hora::DataType::kFloat32,
                                      static_cast<int64_t>(elems))
                   .value();
      s = reducer->gradient_ready(static_cast<size_t>(i), v);
      if (!s.ok()) return fail(s, "gradient_ready");
    }
    s = reducer->synchronize();
    if (!s.ok()) return fail(s, "synchronize");
    if (step >= 5) step_times.push_back(us_since(t0));
  }
  if (hora::rank() == 0)
    std::printf("cpp small_allreduce_us %.2f reducer_step_us %.1f\n", median(calls),
                median(step_times));
  reducer.reset();
  const hora::Status shut = hora::shutdown();
  if (!shut.ok()) {
    std::fprintf(stderr, "binding_overhead_cpp: shutdown: %s\n", shut.to_string().c_str());
    return 1;
  }
  return 0;
}
