// kernels_bench: CPU kernel throughput against memcpy, per ISA (Google Benchmark).
//
// Every benchmark works on 64 MiB buffers, allocated page-aligned and pre-faulted (written)
// before any timing, and reports bytes/s with bytes = 64 MiB per iteration, the size of
// one buffer, for every kernel alike:
//   memcpy              reads 64 MiB, writes 64 MiB
//   pieces/memcpy       the same in 512 KiB calls (bm_copy), as the shared-memory allreduce
//                       copies; pieces/copy/<isa> with kernels::copy (the collectives' copy)
//   .../dst+16          the same into a destination 16 bytes past a page (a glibc heap
//                       block's start): memcpy's `rep movsb` slows down there on some CPUs;
//                       the pieces rows' summary ratio is to pieces/memcpy
//   reduce_sum/<dtype>  dst += src: reads 2 x 64 MiB, writes 64 MiB
//   reduce_sum_l2/float32  the same on 128 KiB buffers (bytes = 128 KiB per iteration),
//                       L2-resident, to show the compute-bound vector/scalar ratio
// so a memory-bound reduce moves 1.5x memcpy's traffic for the same "bytes". float16 and
// bfloat16 buffers hold 32 Mi elements, float32 16 Mi. Times are wall-clock (UseRealTime).
//
// The scalar path is compiled with -fno-tree-vectorize (kernels/cpu/CMakeLists.txt), so the
// vector/scalar ratio compares real SIMD code with genuinely scalar code.
//
// After the runs a summary prints, per kernel: GB/s (1e9 bytes/s), the ratio to memcpy, and
// for float32 the vector/scalar ratio. Targets from the issue: float32 sum >= 0.8x memcpy,
// float16/bfloat16 sum >= 0.5x memcpy, every vector path >= 4x scalar for float32.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "hora/data_type.h"
#include "hora/reduce_op.h"
#include "kernels/kernels.h"

namespace {

using hora::DataType;
using hora::kernels::Isa;

constexpr size_t kBufferBytes = size_t{64} << 20;
// A second, L2-resident size for float32 (dst + src = 256 KiB): the vector/scalar compute
// ratio once memory bandwidth no longer caps the vector paths.
constexpr size_t kCachedBytes = size_t{128} << 10;
constexpr const char* kCachedPrefix = "reduce_sum_l2";
constexpr size_t kCopyPieceBytes = size_t{512} << 10;

// A page-aligned buffer, written once so that every page is faulted in before timing.
class Buffer {
 public:
  explicit Buffer(size_t bytes = kBufferBytes) : data_(std::aligned_alloc(4096, bytes)) {}
  ~Buffer() { std::free(data_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return data_; }

 private:
  void* data_;
};

// Fills with `value` in the dtype (so sums stay finite and normal: no subnormal slow paths).
void fill(void* dst, size_t bytes, DataType dtype, float value) {
  const size_t count = bytes / hora::data_type_bytes(dtype);
  if (dtype == DataType::kFloat32) {
    auto* p = static_cast<float*>(dst);
    for (size_t i = 0; i < count; ++i) p[i] = value;
    return;
  }
  const uint16_t bits = dtype == DataType::kFloat16 ? hora::kernels::f32_to_f16(value)
                                                    : hora::kernels::f32_to_bf16(value);
  auto* p = static_cast<uint16_t*>(dst);
  for (size_t i = 0; i < count; ++i) p[i] = bits;
}

void bm_memcpy(benchmark::State& state) {
  Buffer src, dst;
  std::memset(src.data(), 1, kBufferBytes);  // Pre-fault both buffers.
  std::memset(dst.data(), 0, kBufferBytes);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kBufferBytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBufferBytes));
}

// Copies the buffer with memcpy (`copy` false) or kernels::copy on `isa`, into a destination
// `dst_offset` bytes past a page (the buffers hold a page more than they copy), in pieces of
// kCopyPieceBytes: the slice the shared-memory allreduce copies per step at 2 ranks (half its
// 1 MiB slot). One call per piece, as there: glibc's memcpy takes `rep movsb` from about 2 KiB
// up to a threshold it sets from the cache sizes (on AMD CPUs, the L2's), and vector moves
// above, so a single 64 MiB call would not show what the collectives' copies get.
void bm_copy(benchmark::State& state, bool copy, Isa isa, size_t dst_offset) {
  if (copy && !hora::kernels::select_isa(isa)) {
    state.SkipWithError("ISA not supported by this CPU");
    return;
  }
  Buffer src(kBufferBytes + 4096), dst(kBufferBytes + 4096);
  std::memset(src.data(), 1, kBufferBytes + 4096);  // Pre-fault both buffers.
  std::memset(dst.data(), 0, kBufferBytes + 4096);
  void* to = static_cast<char*>(dst.data()) + dst_offset;
  const auto* from = static_cast<const char*>(src.data());
  for (auto _ : state) {
    for (size_t at = 0; at < kBufferBytes; at += kCopyPieceBytes) {
      if (copy)
        hora::kernels::copy(static_cast<char*>(to) + at, from + at, kCopyPieceBytes);
      else
        std::memcpy(static_cast<char*>(to) + at, from + at, kCopyPieceBytes);
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBufferBytes));
  hora::kernels::select_isa(hora::kernels::best_isa());
}

void bm_reduce_sum(benchmark::State& state, DataType dtype, Isa isa, size_t bytes) {
  if (!hora::kernels::select_isa(isa)) {
    state.SkipWithError("ISA not supported by this CPU");
    return;
  }
  Buffer src(bytes), dst(bytes);
  fill(src.data(), bytes, dtype, 1.0f);
  fill(dst.data(), bytes, dtype, 0.5f);
  const size_t count = bytes / hora::data_type_bytes(dtype);
  for (auto _ : state) {
    hora::kernels::reduce(dst.data(), src.data(), count, dtype, hora::ReduceOp::kSum);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  hora::kernels::select_isa(hora::kernels::best_isa());
}

// Console output as usual, plus each run's bytes/s kept for the summary.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  SummaryReporter() : ConsoleReporter(OO_Tabular) {}  // No colour codes: logs stay readable.
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred || run.run_type != Run::RT_Iteration) continue;
      const auto it = run.counters.find("bytes_per_second");
      if (it != run.counters.end()) rates_[run.run_name.function_name] = it->second.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  const std::map<std::string, double>& rates() const { return rates_; }

 private:
  std::map<std::string, double> rates_;  // By benchmark name ("reduce_sum/float32/avx2").
};

// The destination offsets of the copy benchmarks: none, and the 16 bytes of a glibc heap
// block's header (a std::vector of a few MiB starts 16 bytes past a page).
constexpr size_t kCopyOffsets[] = {0, 16};

// "pieces/memcpy[/dst+16]" or "pieces/copy/<isa>[/dst+16]" (bm_copy); their summary ratio is
// to "pieces/memcpy", while the reductions' is to the whole-buffer "memcpy".
std::string copy_name(const char* isa, size_t dst_offset) {
  return std::string("pieces/") + (isa == nullptr ? "memcpy" : std::string("copy/") + isa) +
         (dst_offset == 0 ? "" : "/dst+" + std::to_string(dst_offset));
}

std::string reduce_name(DataType dtype, Isa isa, const char* prefix = "reduce_sum") {
  return std::string(prefix) + "/" + hora::data_type_name(dtype) + "/" +
         hora::kernels::isa_name(isa);
}

void print_summary(const std::map<std::string, double>& rates, const std::vector<Isa>& isas) {
  const auto find = [&](const std::string& name) {
    const auto it = rates.find(name);
    return it == rates.end() ? 0.0 : it->second;
  };
  const double memcpy_rate = find("memcpy");
  const double scalar_f32 = find(reduce_name(DataType::kFloat32, Isa::kScalar));
  std::printf(
      "\nSummary (GB/s = 1e9 bytes/s, bytes = one buffer per iteration: 64 MiB, or 128 KiB "
      "for _l2; the console's G/s is 2^30 bytes/s; memcpy and copy move 2x the buffer, reduce "
      "3x):\n");
  std::printf("%-28s %9s %10s %12s\n", "kernel", "GB/s", "x memcpy", "x scalar");
  std::printf("%-28s %9.2f %10.2f %12s\n", "memcpy", memcpy_rate / 1e9, 1.0, "");
  const double pieces_rate = find(copy_name(nullptr, 0));
  for (size_t offset : kCopyOffsets) {
    std::vector<std::string> names = {copy_name(nullptr, offset)};
    for (Isa isa : isas) names.push_back(copy_name(hora::kernels::isa_name(isa), offset));
    for (const std::string& name : names) {
      const double rate = find(name);
      if (rate > 0)
        std::printf("%-28s %9.2f %10.2f %12s\n", name.c_str(), rate / 1e9,
                    pieces_rate > 0 ? rate / pieces_rate : 0.0, "");
    }
  }
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    const double scalar = find(reduce_name(dtype, Isa::kScalar));
    for (Isa isa : isas) {
      const double rate = find(reduce_name(dtype, isa));
      if (rate == 0) continue;
      char vs_scalar[32] = "";
      if (isa != Isa::kScalar && scalar > 0)
        std::snprintf(vs_scalar, sizeof vs_scalar, "%.2f", rate / scalar);
      std::printf("%-28s %9.2f %10.2f %12s\n", reduce_name(dtype, isa).c_str(), rate / 1e9,
                  memcpy_rate > 0 ? rate / memcpy_rate : 0.0, vs_scalar);
    }
  }
  // The same float32 sum on L2-resident buffers: the compute ratio, without the memory wall.
  const double scalar_l2 = find(reduce_name(DataType::kFloat32, Isa::kScalar, kCachedPrefix));
  for (Isa isa : isas) {
    const double rate = find(reduce_name(DataType::kFloat32, isa, kCachedPrefix));
    if (rate == 0) continue;
    char vs_scalar[32] = "";
    if (isa != Isa::kScalar && scalar_l2 > 0)
      std::snprintf(vs_scalar, sizeof vs_scalar, "%.2f", rate / scalar_l2);
    std::printf("%-28s %9.2f %10s %12s\n",
                reduce_name(DataType::kFloat32, isa, kCachedPrefix).c_str(), rate / 1e9, "-",
                vs_scalar);
  }
  std::printf(
      "Targets: float32 sum >= 0.80x memcpy; float16/bfloat16 sum >= 0.50x memcpy; "
      "float32 vector >= 4x scalar%s.\n",
      scalar_f32 > 0 ? "" : " (scalar not run)");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (hora::kernels::isa_supported(isa))
      isas.push_back(isa);
    else
      std::printf("note: this CPU lacks %s; its benchmarks are not registered\n",
                  hora::kernels::isa_name(isa));
  }
  benchmark::RegisterBenchmark("memcpy", bm_memcpy)->UseRealTime()->Unit(benchmark::kMillisecond);
  for (size_t offset : kCopyOffsets) {
    benchmark::RegisterBenchmark(copy_name(nullptr, offset).c_str(), bm_copy, false, Isa::kScalar,
                                 offset)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    for (Isa isa : isas) {
      benchmark::RegisterBenchmark(copy_name(hora::kernels::isa_name(isa), offset).c_str(), bm_copy,
                                   true, isa, offset)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    for (Isa isa : isas) {
      benchmark::RegisterBenchmark(reduce_name(dtype, isa).c_str(), bm_reduce_sum, dtype, isa,
                                   kBufferBytes)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  for (Isa isa : isas) {
    benchmark::RegisterBenchmark(reduce_name(DataType::kFloat32, isa, kCachedPrefix).c_str(),
                                 bm_reduce_sum, DataType::kFloat32, isa, kCachedBytes)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  print_summary(reporter.rates(), isas);
  benchmark::Shutdown();
  return 0;
}
