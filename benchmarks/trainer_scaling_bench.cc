// trainer_scaling_bench: data-parallel training throughput of the reference trainer, the
// figure issue 9's scaling target is stated in. One configuration per run:
//
//   horarun -np 2 build/benchmarks/trainer_scaling_bench [--batch-size 64] [--steps 30]
//           [--no-overlap | --plain] [--hidden 2048,2048,1024] [--inputs 1024]
//
// Model 1024-2048-2048-1024-10 (8.4M parameters, 33.6 MB of float32 gradients per step),
// SGD with momentum, one BLAS thread per rank, synthetic data. After --warmup steps it times
// --steps steps back to back (wall time from the first to the last, no barrier between steps,
// as in training); rank 0 prints one line with the total samples/s, the mean step time, and
// the time step() spent waiting for the allreduces (the communication not hidden behind
// backward; with --no-overlap every allreduce starts after backward, so that is all of it).
// --plain (1 rank only) trains without hora in the step at all: the single-process baseline.
// --memcpy measures this process's memcpy bandwidth instead (32 MiB buffers back and forth
// for 1.5 s, GB/s of bytes copied) and trains nothing: run alone and as two processes at once,
// it shows how much of the memory bus one process gets when the other uses it too.
// trainer_scaling.sh runs the configurations and derives efficiency and hidden share.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "examples/trainer/sgd.h"
#include "examples/trainer/training.h"
#include "hora/broadcast.h"
#include "hora/distributed_optimizer.h"
#include "hora/hora.h"

namespace hora {
namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  int64_t batch_size = 64;
  int64_t inputs = 1024;
  std::vector<int64_t> hidden = {2048, 2048, 1024};
  int steps = 30;
  int warmup = 5;
  bool no_overlap = false;
  bool plain = false;
  int blas_threads = 1;
  bool memcpy_probe = false;
};

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// memcpy GB/s (bytes copied) of this process over 1.5 s of 32 MiB copies.
double memcpy_gbs() {
  const size_t bytes = size_t{32} << 20;
  std::vector<char> a(bytes, 1), b(bytes, 2);
  const Clock::time_point t0 = Clock::now();
  size_t copied = 0;
  while (seconds(Clock::now() - t0) < 1.5) {
    std::memcpy(b.data(), a.data(), bytes);
    std::memcpy(a.data(), b.data(), bytes);
    copied += 2 * bytes;
  }
  const double gbs = static_cast<double>(copied) / seconds(Clock::now() - t0) / 1e9;
  volatile char sink = static_cast<char>(a[7] ^ b[9]);  // the copies are used
  (void)sink;
  return gbs;
}

Status run(const Flags& flags) {
  HORA_RETURN_IF_ERROR(init());
  if (flags.plain && size() != 1)
    return Status::invalid_argument(
        "--plain is the single-process baseline: run it on 1 rank, "
        "not " +
        std::to_string(size()));
  trainer::set_blas_threads(flags.blas_threads);
  trainer::DatasetSpec spec;
  spec.input_dim = flags.inputs;
  spec.train_count = flags.batch_size * size() * 4;
  spec.test_count = 0;
  HORA_ASSIGN_OR_RETURN(trainer::SplitDataset data, trainer::make_dataset(spec));
  std::vector<int64_t> sizes = {flags.inputs};
  sizes.insert(sizes.end(), flags.hidden.begin(), flags.hidden.end());
  sizes.push_back(spec.class_count);
  HORA_ASSIGN_OR_RETURN(trainer::Mlp model, trainer::Mlp::create(sizes, 1));
  HORA_ASSIGN_OR_RETURN(auto sgd, trainer::Sgd::create(model.parameters(), {0.01, 0.9, 0.0}));
  DistributedOptions options;
  options.overlap_backward = !flags.no_overlap;
  HORA_ASSIGN_OR_RETURN(auto dist, DistributedOptimizer::create(*sgd, options));
  HORA_ASSIGN_OR_RETURN(
      trainer::ShardedLoader loader,
      trainer::ShardedLoader::create(data.train, flags.batch_size * size(), rank(), size(), 1));
  HORA_RETURN_IF_ERROR(broadcast_parameters(model.parameters(), 0));

  trainer::StepBuffers buffers;
  const trainer::GradientReadyFn no_hook = [](const std::string&) { return Status::OK(); };
  Clock::duration waiting{};
  Clock::time_point start;
  for (int s = 0; s < flags.warmup + flags.steps; ++s) {
    if (s == flags.warmup) {
      HORA_RETURN_IF_ERROR(barrier());  // the timed steps start together
      start = Clock::now();
    }
    loader.load(0, s % loader.steps_per_epoch(), buffers.x, buffers.labels);
    if (flags.plain) {
      HORA_RETURN_IF_ERROR(sgd->zero_grad());
      HORA_RETURN_IF_ERROR(trainer::forward_backward(model, buffers, no_hook).status());
      HORA_RETURN_IF_ERROR(sgd->step());
      continue;
    }
    HORA_RETURN_IF_ERROR(dist->zero_grad());
    HORA_RETURN_IF_ERROR(trainer::forward_backward(model, buffers, dist->hook()).status());
    const Clock::time_point backward_done = Clock::now();
    HORA_RETURN_IF_ERROR(dist->synchronize());
    const Clock::time_point synced = Clock::now();
    HORA_RETURN_IF_ERROR(sgd->step());
    if (s >= flags.warmup) waiting += synced - backward_done;
  }
  const Clock::duration total = Clock::now() - start;
  if (rank() == 0) {
    const double step_s = seconds(total) / flags.steps;
    std::printf(
        "ranks %d batch %lld overlap %s params %lld: %.0f samples/s, step %.1f ms, "
        "waiting for allreduce after backward %.1f ms\n",
        size(), static_cast<long long>(flags.batch_size),
        flags.plain ? "plain" : (flags.no_overlap ? "no" : "yes"),
        static_cast<long long>(model.parameter_count()), flags.batch_size * size() / step_s,
        1e3 * step_s, 1e3 * seconds(waiting) / flags.steps);
  }
  return shutdown();
}

}  // namespace
}  // namespace hora

int main(int argc, char** argv) {
  hora::Flags flags;
  CLI::App app{"data-parallel training throughput of the reference trainer"};
  app.add_option("--batch-size", flags.batch_size, "samples per step on each rank");
  app.add_option("--inputs", flags.inputs, "input features");
  app.add_option("--hidden", flags.hidden, "hidden layer widths")->delimiter(',');
  app.add_option("--steps", flags.steps, "timed steps");
  app.add_option("--warmup", flags.warmup, "untimed steps first");
  app.add_flag("--no-overlap", flags.no_overlap, "start every allreduce after backward");
  app.add_flag("--plain", flags.plain, "1 rank: train without hora in the step (the baseline)");
  app.add_option("--blas-threads", flags.blas_threads, "BLAS threads per rank");
  app.add_flag("--memcpy", flags.memcpy_probe, "print this process's memcpy GB/s, train nothing");
  CLI11_PARSE(app, argc, argv);
  if (flags.memcpy_probe) {
    std::printf("memcpy %.2f GB/s\n", hora::memcpy_gbs());
    return 0;
  }
  hora::Status status = hora::run(flags);
  if (!status.ok()) {
    std::fprintf(stderr, "trainer_scaling_bench: rank %d: %s\n", hora::rank(),
                 status.to_string().c_str());
    (void)hora::shutdown();
    return 1;
  }
  return 0;
}
