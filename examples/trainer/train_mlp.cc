// train_mlp: the reference trainer's main job. A single-process training loop made
// data-parallel by wrapping its optimizer in hora::DistributedOptimizer:
//
//   horarun -np 2 build/examples/trainer/train_mlp [--epochs 5] [--batch-size 64] ...
//
// Every rank builds the same synthetic data set, takes its slice of each global batch
// (per-rank batch --batch-size), starts from its own random weights and receives rank 0's
// through broadcast_parameters (or rank 0's checkpoint, with --checkpoint). Rank 0 prints a
// progress bar per epoch, one line per epoch with the loss and held-out accuracy, and at
// the end the total time and the scaling figure: throughput over N ranks against N times
// the throughput of one process at the same per-rank batch, which rank 0 measures first in
// a short run of its own (--baseline-steps; the other ranks wait meanwhile).
//
// --fail-at-step S --fail-rank R make rank R throw at global step S (testing the launcher's
// handling of a rank that dies mid-epoch).
//
// --elastic: the elastic loop (elastic_loop.h) under `horarun --min-np ...`: commits every
// --commit-every steps, survives a worker's death or added hosts in the same processes, with a
// fixed --global-batch-size. --elastic-fail G:S:R:kill|stop (repeatable, testing) makes rank R
// of generation G raise SIGKILL or SIGSTOP before global step S; --weights-out PREFIX makes
// every rank write its final parameters and optimizer state to PREFIX.<rank> (a checkpoint).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "examples/trainer/adam.h"
#include "examples/trainer/checkpoint.h"
#include "examples/trainer/elastic_loop.h"
#include "examples/trainer/progress_bar.h"
#include "examples/trainer/sgd.h"
#include "examples/trainer/training.h"
#include "hora/broadcast.h"
#include "hora/distributed_optimizer.h"
#include "hora/elastic.h"
#include "hora/hora.h"

namespace hora {
namespace trainer {
namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  int epochs = 5;
  int64_t batch_size = 64;  // per rank
  double lr = 0.0;          // 0: the optimizer's default below
  std::string optimizer = "sgd";
  std::string compression = "none";
  std::string checkpoint;
  // Wide enough that a step's compute outweighs its allreduce, so the scaling figure at the end
  // says something; with 128-wide layers a step is mostly communication.
  std::vector<int64_t> hidden = {512, 512};
  uint64_t seed = 1;
  int blas_threads = 1;
  int backward_passes = 1;
  bool no_overlap = false;
  int64_t baseline_steps = 60;
  int64_t fail_at_step = -1;
  int fail_rank = -1;
  bool elastic = false;
  int64_t global_batch_size = 60;
  int64_t commit_every = 10;
  std::vector<std::string> elastic_fail;
  std::string weights_out;
};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

StatusOr<std::unique_ptr<Optimizer>> make_optimizer(const Flags& flags, Mlp& model) {
  if (flags.optimizer == "sgd") {
    SgdOptions o;
    if (flags.lr > 0) o.lr = flags.lr;
    HORA_ASSIGN_OR_RETURN(auto sgd, Sgd::create(model.parameters(), o));
    return std::unique_ptr<Optimizer>(std::move(sgd));
  }
  if (flags.optimizer == "adam") {
    AdamOptions o;
    o.lr = flags.lr > 0 ? flags.lr : 2e-3;
    HORA_ASSIGN_OR_RETURN(auto adam, Adam::create(model.parameters(), o));
    return std::unique_ptr<Optimizer>(std::move(adam));
  }
  return Status::invalid_argument("--optimizer '" + flags.optimizer + "': expected sgd or adam");
}

// Samples per second of this process alone at the per-rank batch: `steps` steps of the same
// model on a throwaway copy, no communication. The first steps warm up and are not timed.
StatusOr<double> measure_single_process(const Flags& flags, const Dataset& train,
                                        const std::vector<int64_t>& sizes) {
  HORA_ASSIGN_OR_RETURN(Mlp model, Mlp::create(sizes, flags.seed));
  HORA_ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> opt, make_optimizer(flags, model));
  HORA_ASSIGN_OR_RETURN(ShardedLoader loader,
                        ShardedLoader::create(train, flags.batch_size, 0, 1, flags.seed));
  StepBuffers buffers;
  const int64_t warmup = 5;
  Clock::time_point start = Clock::now();
  for (int64_t s = 0; s < warmup + flags.baseline_steps; ++s) {
    if (s == warmup) start = Clock::now();
    loader.load(0, s % loader.steps_per_epoch(), buffers.x, buffers.labels);
    HORA_RETURN_IF_ERROR(opt->zero_grad());
    HORA_RETURN_IF_ERROR(forward_backward(model, buffers, nullptr).status());
    HORA_RETURN_IF_ERROR(opt->step());
  }
  return static_cast<double>(flags.baseline_steps * flags.batch_size) / seconds_since(start);
}

// Held-out accuracy: each rank scores its share of the test set, then the counts are summed.
StatusOr<double> evaluate(Mlp& model, const Dataset& test, int64_t epoch) {
  const int64_t n = test.count(), r = rank(), p = size();
  const int64_t correct = count_correct_rows(model, test, n * r / p, n * (r + 1) / p);
  HORA_ASSIGN_OR_RETURN(std::vector<double> sums,
                        allreduce_metrics("eval." + std::to_string(epoch),
                                          {static_cast<double>(correct)}, ReduceOp::kSum));
  return n > 0 ? sums[0] / static_cast<double>(n) : 0.0;
}

// What the epochs of one job share.
struct Job {
  const Flags& flags;
  const SplitDataset& data;
  ShardedLoader& loader;
  Mlp& model;
  DistributedOptimizer& dist;
  int64_t global_batch;
  int64_t steps;  // per epoch
  bool is_root;
};

// Rank 0 loads the checkpoint when there is one; then every rank takes rank 0's parameters,
// optimizer state and starting epoch. Returns the epoch to start from.
StatusOr<int64_t> resume_and_agree(const Flags& flags, Mlp& model, DistributedOptimizer& dist,
                                   bool is_root) {
  float start_epoch = 0.0f;
  if (is_root && !flags.checkpoint.empty() && access(flags.checkpoint.c_str(), F_OK) == 0) {
    HORA_ASSIGN_OR_RETURN(int64_t saved_epoch,
                          load_checkpoint(flags.checkpoint, model.parameters(), dist.state()));
    start_epoch = static_cast<float>(saved_epoch);
    std::printf("resumed from %s after epoch %lld\n", flags.checkpoint.c_str(),
                static_cast<long long>(saved_epoch));
  }
  HORA_RETURN_IF_ERROR(broadcast_parameters(model.parameters(), 0));
  HORA_RETURN_IF_ERROR(broadcast_optimizer_state(dist, 0));
  HORA_RETURN_IF_ERROR(broadcast_state_tensors({{"start_epoch", &start_epoch, 1}}, "job/", 0));
  return static_cast<int64_t>(start_epoch);
}

// Totals over the epochs run, for the final lines.
struct Totals {
  double final_accuracy = 0.0;
  double train_seconds = 0.0;
  int64_t trained_samples = 0;
};

// One epoch: its steps (backward_passes passes each), the agreed loss, the held-out accuracy,
// rank 0's line and checkpoint.
Status run_epoch(const Job& job, int64_t epoch, StepBuffers& buffers, Totals& totals) {
  const Flags& flags = job.flags;
  const int my_rank = rank();
  const int64_t samples_per_step = job.global_batch * flags.backward_passes;
  ProgressBar bar(stdout, "epoch " + std::to_string(epoch + 1) + "/" + std::to_string(flags.epochs),
                  job.steps, isatty(STDOUT_FILENO) != 0);
  const Clock::time_point epoch_start = Clock::now();
  double loss_sum = 0.0;
  for (int64_t step = 0; step < job.steps; ++step) {
    const int64_t global_step = epoch * job.steps + step;
    if (global_step == flags.fail_at_step && my_rank == flags.fail_rank)
      throw std::runtime_error("train_mlp: injected failure on rank " + std::to_string(my_rank) +
                               " at step " + std::to_string(global_step));
    HORA_RETURN_IF_ERROR(job.dist.zero_grad());
    for (int pass = 0; pass < flags.backward_passes; ++pass) {
      job.loader.load(epoch, step * flags.backward_passes + pass, buffers.x, buffers.labels);
      HORA_ASSIGN_OR_RETURN(double loss, forward_backward(job.model, buffers, job.dist.hook()));
      loss_sum += loss / flags.backward_passes;
    }
    HORA_RETURN_IF_ERROR(job.dist.step());
    if (job.is_root) bar.update(step + 1, loss_sum / (step + 1), (step + 1) * samples_per_step);
  }
  const double epoch_seconds = seconds_since(epoch_start);
  totals.train_seconds += epoch_seconds;
  totals.trained_samples += job.steps * samples_per_step;
  HORA_ASSIGN_OR_RETURN(double loss,
                        average_metric("loss." + std::to_string(epoch), loss_sum / job.steps));
  HORA_ASSIGN_OR_RETURN(totals.final_accuracy, evaluate(job.model, job.data.test, epoch));
  if (!job.is_root) return Status::OK();
  bar.finish(loss, job.steps * samples_per_step);
  std::printf("epoch %lld/%d: loss %.4f, held-out accuracy %.2f%%, %.2f s, %.0f samples/s\n",
              static_cast<long long>(epoch) + 1, flags.epochs, loss, 100.0 * totals.final_accuracy,
              epoch_seconds, job.steps * samples_per_step / epoch_seconds);
  if (!flags.checkpoint.empty())
    HORA_RETURN_IF_ERROR(
        save_checkpoint(flags.checkpoint, job.model.parameters(), job.dist.state(), epoch + 1));
  std::fflush(stdout);
  return Status::OK();
}

// Rank 0's last lines: the total time and accuracy, and the scaling against the baseline.
void print_summary(const Flags& flags, const Totals& totals, double baseline, int ranks,
                   Clock::time_point job_start) {
  const double total = seconds_since(job_start);
  std::printf("done: %.2f s in total, final held-out accuracy %.2f%%\n", total,
              100.0 * totals.final_accuracy);
  if (baseline > 0 && totals.train_seconds > 0) {
    const double throughput = totals.trained_samples / totals.train_seconds;
    std::printf(
        "scaling: %.0f samples/s on %d ranks vs %.0f samples/s on 1 rank (%lld-step "
        "baseline): efficiency %.1f%%\n",
        throughput, ranks, baseline, static_cast<long long>(flags.baseline_steps),
        100.0 * throughput / (ranks * baseline));
  }
}

// The data set of --seed and the MLP's layer widths for it: input, --hidden, classes.
struct Problem {
  SplitDataset data;
  std::vector<int64_t> sizes;
};

StatusOr<Problem> make_problem(const Flags& flags) {
  DatasetSpec spec;
  spec.seed = flags.seed;
  Problem problem;
  HORA_ASSIGN_OR_RETURN(problem.data, make_dataset(spec));
  problem.sizes = {spec.input_dim};
  problem.sizes.insert(problem.sizes.end(), flags.hidden.begin(), flags.hidden.end());
  problem.sizes.push_back(spec.class_count);
  return problem;
}

// --elastic: the model and optimizer of run(), trained by train_elastic.
Status run_elastic(const Flags& flags) {
  HORA_RETURN_IF_ERROR(init());
  set_blas_threads(flags.blas_threads);
  HORA_ASSIGN_OR_RETURN(Problem problem, make_problem(flags));
  const SplitDataset& data = problem.data;
  const std::vector<int64_t>& sizes = problem.sizes;
  // Each worker starts from its own weights; the first sync gives every one rank 0's.
  HORA_ASSIGN_OR_RETURN(Mlp model, Mlp::create(sizes, flags.seed * 1000 + rank()));
  HORA_ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> inner, make_optimizer(flags, model));
  ElasticSpec elastic;
  elastic.epochs = flags.epochs;
  elastic.global_batch = flags.global_batch_size;
  elastic.commit_every = flags.commit_every;
  elastic.shuffle_seed = flags.seed;
  HORA_ASSIGN_OR_RETURN(elastic.options.compression, parse_compression(flags.compression));
  for (const std::string& text : flags.elastic_fail) {
    HORA_ASSIGN_OR_RETURN(FailPoint f, parse_fail_point(text));
    elastic.fail_points.push_back(f);
  }
  std::printf("train_mlp: worker pid %d is rank %d of %d in generation %lld\n", getpid(), rank(),
              size(), static_cast<long long>(elastic::generation()));
  std::fflush(stdout);
  HORA_ASSIGN_OR_RETURN(ElasticResult result, train_elastic(elastic, data, model, *inner));
  if (!flags.weights_out.empty())
    HORA_RETURN_IF_ERROR(save_checkpoint(flags.weights_out + "." + std::to_string(rank()),
                                         model.parameters(), inner->state(), flags.epochs));
  std::printf(
      "train_mlp: worker pid %d done as rank %d of %d after %lld reset%s: held-out "
      "accuracy %.2f%%\n",
      getpid(), rank(), size(), static_cast<long long>(result.resets),
      result.resets == 1 ? "" : "s", 100.0 * result.final_accuracy);
  return shutdown();
}

Status run(const Flags& flags) {
  if (flags.elastic) return run_elastic(flags);
  HORA_RETURN_IF_ERROR(init());
  const int my_rank = rank(), ranks = size();
  const bool is_root = my_rank == 0;
  set_blas_threads(flags.blas_threads);

  HORA_ASSIGN_OR_RETURN(Problem problem, make_problem(flags));
  const SplitDataset& data = problem.data;
  const std::vector<int64_t>& sizes = problem.sizes;
  const int64_t global_batch = flags.batch_size * ranks;
  HORA_ASSIGN_OR_RETURN(ShardedLoader loader, ShardedLoader::create(data.train, global_batch,
                                                                    my_rank, ranks, flags.seed));
  // Each rank starts from its own weights: broadcast_parameters is what makes them agree.
  HORA_ASSIGN_OR_RETURN(Mlp model, Mlp::create(sizes, flags.seed * 1000 + my_rank));
  HORA_ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> inner, make_optimizer(flags, model));
  DistributedOptions options;
  HORA_ASSIGN_OR_RETURN(options.compression, parse_compression(flags.compression));
  options.backward_passes_per_step = flags.backward_passes;
  options.average_aggregated_gradients = true;
  options.overlap_backward = !flags.no_overlap;
  HORA_ASSIGN_OR_RETURN(auto dist, DistributedOptimizer::create(*inner, options));

  double baseline = 0.0;
  if (is_root && flags.baseline_steps > 0) {
    HORA_ASSIGN_OR_RETURN(baseline, measure_single_process(flags, data.train, sizes));
  }
  HORA_ASSIGN_OR_RETURN(const int64_t first_epoch, resume_and_agree(flags, model, *dist, is_root));
  if (is_root)
    std::printf(
        "train_mlp: %d rank%s, MLP %s (%lld parameters), %s, per-rank batch %lld, "
        "compression %s, BLAS %s (%d thread%s per rank)\n",
        ranks, ranks == 1 ? "" : "s", shape_to_string(sizes).c_str(),
        static_cast<long long>(model.parameter_count()), inner->name(),
        static_cast<long long>(flags.batch_size), flags.compression.c_str(), blas_name().c_str(),
        flags.blas_threads, flags.blas_threads == 1 ? "" : "s");
  std::fflush(stdout);

  const Job job{flags,
                data,
                loader,
                model,
                *dist,
                global_batch,
                loader.steps_per_epoch() / flags.backward_passes,
                is_root};
  StepBuffers buffers;
  Totals totals;
  const Clock::time_point job_start = Clock::now();
  if (first_epoch >= flags.epochs) {
    // The checkpoint already covers --epochs: nothing to train, but the final line still
    // reports the loaded model's real accuracy (every rank takes part in the evaluation).
    HORA_ASSIGN_OR_RETURN(totals.final_accuracy, evaluate(model, data.test, first_epoch));
    if (is_root)
      std::printf("no epochs left to run: the checkpoint is at epoch %lld of %d\n",
                  static_cast<long long>(first_epoch), flags.epochs);
  }
  for (int64_t epoch = first_epoch; epoch < flags.epochs; ++epoch)
    HORA_RETURN_IF_ERROR(run_epoch(job, epoch, buffers, totals));
  if (is_root) print_summary(flags, totals, baseline, ranks, job_start);
  return shutdown();
}

}  // namespace
}  // namespace trainer
}  // namespace hora

int main(int argc, char** argv) {
  hora::trainer::Flags flags;
  CLI::App app{"hora reference trainer: an MLP on a synthetic task, data-parallel over horarun"};
  app.add_option("--epochs", flags.epochs, "epochs to train")->check(CLI::PositiveNumber);
  app.add_option("--batch-size", flags.batch_size, "samples per step on each rank")
      ->check(CLI::PositiveNumber);
  app.add_option("--lr", flags.lr, "learning rate (default: 0.05 for sgd, 0.002 for adam)");
  app.add_option("--optimizer", flags.optimizer, "sgd (with momentum 0.9) or adam")
      ->check(CLI::IsMember({"sgd", "adam"}));
  app.add_option("--compression", flags.compression, "gradient compression: none, fp16, bf16")
      ->check(CLI::IsMember({"none", "fp16", "bf16"}));
  app.add_option("--checkpoint", flags.checkpoint,
                 "checkpoint file: resumed from when it exists, written after every epoch");
  app.add_option("--hidden", flags.hidden, "hidden layer widths")->delimiter(',');
  app.add_option("--seed", flags.seed, "seed of the data set and the initial weights");
  app.add_option("--blas-threads", flags.blas_threads, "BLAS threads per rank")
      ->check(CLI::PositiveNumber);
  app.add_option("--backward-passes-per-step", flags.backward_passes,
                 "local gradient accumulation: backward passes per optimizer step")
      ->check(CLI::PositiveNumber);
  app.add_flag("--no-overlap", flags.no_overlap,
               "reduce all gradients after backward instead of as each becomes ready");
  app.add_option("--baseline-steps", flags.baseline_steps,
                 "steps of the 1-rank baseline run by rank 0 (0: no scaling figure)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--fail-at-step", flags.fail_at_step, "testing: throw at this global step");
  app.add_option("--fail-rank", flags.fail_rank, "testing: the rank that throws");
  app.add_flag("--elastic", flags.elastic,
               "elastic training (horarun --min-np/--max-np/--host-discovery-script)");
  app.add_option("--global-batch-size", flags.global_batch_size,
                 "--elastic: samples per step over all ranks (divisible by every size)")
      ->check(CLI::PositiveNumber);
  app.add_option("--commit-every", flags.commit_every, "--elastic: steps between commits")
      ->check(CLI::PositiveNumber);
  app.add_option("--elastic-fail", flags.elastic_fail,
                 "testing, --elastic: GENERATION:STEP:RANK:kill|stop raises that signal");
  app.add_option("--weights-out", flags.weights_out,
                 "--elastic: each rank writes its final state to PREFIX.<rank>");
  CLI11_PARSE(app, argc, argv);

  hora::Status status = hora::trainer::run(flags);
  if (!status.ok()) {
    std::fprintf(stderr, "train_mlp: rank %d: %s\n", hora::rank(), status.to_string().c_str());
    (void)hora::shutdown();
    return 1;
  }
  return 0;
}
