// adasum_bench: what op=Adasum costs against Sum, through the engine, under horarun:
//   horarun -np 2 build/benchmarks/adasum_bench [rounds] [iters]
// Rank 0 prints "adasum_bench: <key> <value>" lines, each a median over `rounds` rounds
// (default 5) in which every case runs `iters` (default 10) blocking allreduces in turn, so the
// cases are measured side by side on a shared machine:
//  - sum_ms / adasum_ms: one 16 MiB float32 tensor, op Sum / op Adasum, per allreduce;
//    ratio: adasum_ms / sum_ms;
//  - grouped_sum_ms / grouped_adasum_ms: the same 16 MiB as 64 tensors of 256 KiB in one
//    grouped allreduce (one fused bucket); grouped_ratio: grouped_adasum_ms / adasum_ms, what
//    the per-tensor dot products inside a fused bucket cost against one tensor.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hora/hora.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kElements = size_t{4} << 20;  // 16 MiB of float32
constexpr int kGroup = 64;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

void check(const hora::Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "adasum_bench: %s: %s\n", what, s.to_string().c_str());
  std::exit(1);
}

hora::TensorView view_of(float* data, size_t count) {
  return hora::TensorView::flat(data, hora::DataType::kFloat32, static_cast<int64_t>(count))
      .value();
}

// Milliseconds per allreduce of `iters` blocking allreduces of the whole buffer (barrier to
// barrier). Each iteration restores the input first (Adasum's result replaces it in place).
double time_single(std::vector<float>& buf, const std::vector<float>& input, hora::ReduceOp op,
                   int iters) {
  check(hora::barrier(), "barrier");
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) {
    std::copy(input.begin(), input.end(), buf.begin());
    check(hora::allreduce("single", view_of(buf.data(), buf.size()),
                          view_of(buf.data(), buf.size()), op),
          "allreduce");
  }
  check(hora::barrier(), "barrier");
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / iters;
}

double time_grouped(std::vector<float>& buf, const std::vector<float>& input, hora::ReduceOp op,
                    int iters) {
  const size_t part = buf.size() / kGroup;
  std::vector<hora::TensorView> views;
  std::vector<std::string> names;
  views.reserve(kGroup);
  names.reserve(kGroup);
  for (int g = 0; g < kGroup; ++g) {
    views.push_back(view_of(buf.data() + g * part, part));
    names.push_back("grouped." + std::to_string(g));
  }
  check(hora::barrier(), "barrier");
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) {
    std::copy(input.begin(), input.end(), buf.begin());
    check(hora::grouped_allreduce(names, views, views, op), "grouped allreduce");
  }
  check(hora::barrier(), "barrier");
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / iters;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 10;
  check(hora::init(), "init");
  std::vector<float> input(kElements), buf(kElements);
  for (size_t i = 0; i < kElements; ++i)
    input[i] = static_cast<float>((i * 7 + static_cast<size_t>(hora::rank()) * 3) % 11) - 5.0f;
  using hora::ReduceOp;
  time_single(buf, input, ReduceOp::kSum, 2);  // warm-up: pages, scratch, fusion buffer
  time_single(buf, input, ReduceOp::kAdasum, 2);
  time_grouped(buf, input, ReduceOp::kAdasum, 1);
  std::vector<double> sum, adasum, ratio, gsum, gadasum, gratio;
  for (int r = 0; r < rounds; ++r) {
    sum.push_back(time_single(buf, input, ReduceOp::kSum, iters));
    adasum.push_back(time_single(buf, input, ReduceOp::kAdasum, iters));
    gsum.push_back(time_grouped(buf, input, ReduceOp::kSum, iters));
    gadasum.push_back(time_grouped(buf, input, ReduceOp::kAdasum, iters));
    ratio.push_back(adasum.back() / sum.back());
    gratio.push_back(gadasum.back() / adasum.back());
  }
  if (hora::rank() == 0) {
    std::printf("adasum_bench: ranks %d\n", hora::size());
    std::printf("adasum_bench: sum_ms %.2f\n", median(sum));
    std::printf("adasum_bench: adasum_ms %.2f\n", median(adasum));
    std::printf("adasum_bench: ratio %.3f\n", median(ratio));
    std::printf("adasum_bench: grouped_sum_ms %.2f\n", median(gsum));
    std::printf("adasum_bench: grouped_adasum_ms %.2f\n", median(gadasum));
    std::printf("adasum_bench: grouped_ratio %.3f\n", median(gratio));
  }
  check(hora::shutdown(), "shutdown");
  return 0;
}
