// shm_allreduce_bench: the builtin backend's single-copy shared-memory allreduce against hora's
// ring over the same communicator, in the same run, at N ranks on this host (fork()ed, a
// FileStore in a temporary directory). float32 sum, out of place; every timed result is
// checked (#wrong counts elements that differ from the closed form).
//
// Variants per size: "native" (Communicator::allreduce, input in private memory: copy-in,
// reduce, copy-out), "shared" (in place in shared_buffer(), as the engine's fusion buffer: no
// copy-in, peers read results in place; timed on data that keeps doubling, then checked on one
// call with fresh input), "ring" (collectives::run_allreduce with Algorithm::kRing over the shm
// FIFOs).
// busbw = bytes / time * 2 (N - 1) / N, as nccl-tests. Rank 0 prints.
//
// Usage: shm_allreduce_bench [-np N] [--slot BYTES] [--sizes B,B,...] [--only VARIANT] [--phases]
//   --only native|shared|ring: time one variant (e.g. under perf record); the others print 0.
//   --phases: also time memcpy and kernels::reduce3 of the same bytes on one rank (the
//   single-core bounds of the copy-in / reduce / copy-out phases).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "collectives/backends/builtin/builtin_communicator.h"
#include "collectives/rendezvous/file_store.h"
#include "collectives/scratch_pool.h"
#include "collectives/selector.h"
#include "kernels/kernels.h"

namespace {

using hora::DataType;
using hora::Deadline;
using hora::ReduceOp;
using hora::Status;
using Clock = std::chrono::steady_clock;
namespace hc = hora::collectives;

struct Args {
  int np = 2;
  size_t slot_bytes = 0;
  bool phases = false;
  std::string only;  // empty: every variant
  std::vector<size_t> sizes = {8, 1 << 20, 16 << 20, 64 << 20, 256 << 20};
};

struct Result {
  double us = 0;
  size_t wrong = 0;
};

int iterations(size_t bytes) {
  if (bytes <= 4096) return 20000;
  size_t iters = (size_t{4} << 30) / bytes;  // ~4 GiB moved per variant
  return static_cast<int>(std::max<size_t>(5, std::min<size_t>(iters, 2000)));
}

using Call = std::function<Status()>;

Status timed(hc::Communicator& comm, const Call& call, int iters, double* us) {
  for (int i = 0; i < std::max(2, iters / 10); ++i) HORA_RETURN_IF_ERROR(call());
  float sync = 0;  // line the ranks up before the clock starts
  HORA_RETURN_IF_ERROR(comm.allreduce(&sync, &sync, 1, DataType::kFloat32, ReduceOp::kSum,
                                      Deadline::after(std::chrono::seconds(60))));
  auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) HORA_RETURN_IF_ERROR(call());
  *us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters;
  return Status::OK();
}

size_t count_wrong(const float* out, size_t count, int n) {
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    float want = 0;
    for (int r = 0; r < n; ++r) want += static_cast<float>((r + 1) + (i % 5));
    if (out[i] != want) ++wrong;
  }
  return wrong;
}

// One rank's communicator and what every size's row uses.
struct RankBench {
  const Args& args;
  int rank;
  hc::Communicator& comm;
  float* shared;  // the shared buffer of the largest size (null at one rank)
  hc::AlgorithmOptions ring_options;
};

void print_header(int n, size_t slot_bytes) {
  std::printf(
      "# %d ranks, float32 sum, slot %zu B (0: the default, 1 MiB); time in us, busbw "
      "in GB/s\n",
      n, slot_bytes);
  std::printf("%12s %7s | %10s %7s | %10s %7s | %10s %7s | %12s %12s | %6s\n", "size(B)", "iters",
              "native", "busbw", "shared", "busbw", "ring", "busbw", "native/ring", "shared/ring",
              "#wrong");
}

// One size's row: native (out of place), shared (in place in the shared buffer) and hora's
// ring, each checked; rank 0 prints it.
Status measure_size(RankBench& b, size_t bytes) {
  const int n = b.args.np;
  hc::Communicator& comm = b.comm;
  const Deadline deadline = b.ring_options.deadline;
  const size_t count = std::max<size_t>(1, bytes / 4);
  std::vector<float> in(count), out(count);
  for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>((b.rank + 1) + (i % 5));
  if (b.shared != nullptr) std::memcpy(b.shared, in.data(), count * 4);
  const int iters = iterations(bytes);
  Result native, direct, ring;
  size_t wrong = 0;
  auto wanted = [&](const char* v) { return b.args.only.empty() || b.args.only == v; };
  if (wanted("native")) {
    HORA_RETURN_IF_ERROR(timed(
        comm,
        [&] {
          return comm.allreduce(in.data(), out.data(), count, DataType::kFloat32, ReduceOp::kSum,
                                deadline);
        },
        iters, &native.us));
    wrong += count_wrong(out.data(), count, n);
    std::fill(out.begin(), out.end(), 0.0f);
  }
  if (b.shared != nullptr && wanted("shared")) {
    float* shared = b.shared;
    HORA_RETURN_IF_ERROR(timed(
        comm,
        [&] {
          return comm.allreduce(shared, shared, count, DataType::kFloat32, ReduceOp::kSum,
                                deadline);
        },
        iters, &direct.us));
    std::memcpy(shared, in.data(), count * 4);
    HORA_RETURN_IF_ERROR(
        comm.allreduce(shared, shared, count, DataType::kFloat32, ReduceOp::kSum, deadline));
    wrong += count_wrong(shared, count, n);
  }
  if (wanted("ring")) {
    HORA_RETURN_IF_ERROR(timed(
        comm,
        [&] {
          return hc::run_allreduce(hc::Algorithm::kRing, comm, in.data(), out.data(), count,
                                   DataType::kFloat32, ReduceOp::kSum, b.ring_options);
        },
        std::max(2, iters / 4), &ring.us));
    wrong += count_wrong(out.data(), count, n);
  }
  if (b.rank == 0) {
    const double factor = n > 1 ? 2.0 * (n - 1) / n : 1.0;
    auto bw = [&](double us) { return us > 0 ? count * 4.0 / us / 1000.0 * factor : 0.0; };
    std::printf("%12zu %7d | %10.2f %7.2f | %10.2f %7.2f | %10.2f %7.2f | %12.2f %12.2f | %6zu\n",
                count * 4, iters, native.us, bw(native.us), direct.us, bw(direct.us), ring.us,
                bw(ring.us), native.us > 0 ? ring.us / native.us : 0.0,
                direct.us > 0 ? ring.us / direct.us : 0.0, wrong);
    std::fflush(stdout);
  }
  return Status::OK();
}

// --phases: single-core memcpy and reduce3 bounds on rank 0.
void print_phases(const Args& args) {
  std::printf("# single-core bounds on rank 0 (the others idle): GB/s of the bytes named\n");
  for (size_t bytes : args.sizes) {
    if (bytes < 4096) continue;
    const size_t count = bytes / 4;
    std::vector<float> a(count, 1.0f), b(count, 2.0f), c(count);
    const int iters = iterations(bytes);
    auto t = [&](const std::function<void()>& f) {
      f();
      auto t0 = Clock::now();
      for (int i = 0; i < iters; ++i) f();
      return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters;
    };
    double copy_us = t([&] { std::memcpy(c.data(), a.data(), bytes); });
    double reduce_us = t([&] {
      hora::kernels::reduce3(c.data(), a.data(), b.data(), count, DataType::kFloat32,
                             ReduceOp::kSum);
    });
    std::printf("# %12zu B: memcpy %6.2f GB/s, reduce3 %6.2f GB/s (of output bytes)\n", bytes,
                bytes / copy_us / 1000.0, bytes / reduce_us / 1000.0);
  }
}

Status run_rank(int rank, const Args& args, const std::string& dir) {
  HORA_ASSIGN_OR_RETURN(auto store, hc::FileStore::open(dir));
  hc::BuiltinOptions o;
  o.secret = "bench";
  o.timeout_s = 60;
  o.shm_exchange_slot_bytes = args.slot_bytes;
  size_t largest = 0;
  for (size_t s : args.sizes) largest = std::max(largest, s);
  o.shm_shared_bytes = largest;
  HORA_ASSIGN_OR_RETURN(auto comm, hc::make_builtin_communicator(rank, args.np, *store, o));
  auto* shared = static_cast<float*>(comm->shared_buffer(largest));
  if (shared == nullptr && args.np > 1) return Status::internal("no shared buffer");
  hc::ScratchPool scratch;
  RankBench bench{args, rank, *comm, shared, {}};
  bench.ring_options.scratch = &scratch;
  bench.ring_options.deadline = Deadline::after(std::chrono::seconds(3600));
  if (rank == 0) print_header(args.np, args.slot_bytes);
  for (size_t bytes : args.sizes) HORA_RETURN_IF_ERROR(measure_size(bench, bytes));
  if (rank == 0 && args.phases) print_phases(args);
  return Status::OK();
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", s.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (s == "-np") {
      a.np = std::atoi(next().c_str());
    } else if (s == "--slot") {
      a.slot_bytes = std::strtoull(next().c_str(), nullptr, 10);
    } else if (s == "--only") {
      a.only = next();
      if (a.only != "native" && a.only != "shared" && a.only != "ring") {
        std::fprintf(stderr, "--only takes native, shared or ring, not '%s'\n", a.only.c_str());
        std::exit(2);
      }
    } else if (s == "--phases") {
      a.phases = true;
    } else if (s == "--sizes") {
      a.sizes.clear();
      std::string v = next();
      for (size_t at = 0; at < v.size();) {
        size_t comma = v.find(',', at);
        a.sizes.push_back(std::strtoull(v.substr(at, comma - at).c_str(), nullptr, 10));
        at = comma == std::string::npos ? v.size() : comma + 1;
      }
    } else {
      std::fprintf(stderr,
                   "usage: %s [-np N] [--slot BYTES] [--sizes B,B,...] [--only VARIANT] "
                   "[--phases]\n",
                   argv[0]);
      std::exit(2);
    }
  }
  if (a.np < 1 || a.sizes.empty()) {
    std::fprintf(stderr, "-np must be >= 1 and --sizes non-empty\n");
    std::exit(2);
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  char tmpl[] = "/tmp/hora-shm-bench-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string dir = tmpl;
  std::vector<pid_t> pids;
  for (int r = 0; r < args.np; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      Status st = run_rank(r, args, dir);
      if (!st.ok()) std::fprintf(stderr, "rank %d: %s\n", r, st.to_string().c_str());
      std::fflush(stdout);
      _exit(st.ok() ? 0 : 1);
    }
    pids.push_back(pid);
  }
  int rc = 0;
  for (pid_t p : pids) {
    int status = 0;
    waitpid(p, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
  }
  std::system(("rm -rf " + dir).c_str());
  return rc;
}
