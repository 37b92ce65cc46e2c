#include "examples/trainer/elastic_loop.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <sstream>

#include "examples/trainer/training.h"
#include "hora/broadcast.h"
#include "hora/elastic.h"
#include "hora/hora.h"

namespace hora {
namespace trainer {
namespace {

// A copy of everything training resumes from.
struct Commit {
  std::vector<std::vector<float>> values;  // the parameters', then the optimizer state's
  int64_t epoch = 0;
  int64_t step = 0;  // the next step of `epoch` to run
};

// The parameters' values, then the optimizer state, as one list of views.
std::vector<StateTensor> training_state(Mlp& model, Optimizer& inner) {
  std::vector<StateTensor> views;
  for (const Parameter& p : model.parameters()) views.push_back({p.name, p.value, p.count});
  for (const StateTensor& s : inner.state()) views.push_back(s);
  return views;
}

void save(Commit& commit, const std::vector<StateTensor>& state, int64_t epoch, int64_t step) {
  commit.values.resize(state.size());
  for (size_t i = 0; i < state.size(); ++i)
    commit.values[i].assign(state[i].data, state[i].data + state[i].count);
  commit.epoch = epoch;
  commit.step = step;
}

// A no-op before the first commit (the first sync failed: rank 0's state was not taken yet).
void restore(const Commit& commit, const std::vector<StateTensor>& state) {
  if (commit.values.size() != state.size()) return;
  for (size_t i = 0; i < state.size(); ++i)
    std::copy(commit.values[i].begin(), commit.values[i].end(), state[i].data);
}

// Every rank takes rank 0's parameters, optimizer state and position, then commits them.
Status sync(Mlp& model, Optimizer& inner, Commit& commit) {
  const std::vector<StateTensor> state = training_state(model, inner);
  HORA_RETURN_IF_ERROR(broadcast_state_tensors(state, "elastic/", 0));
  float position[2] = {static_cast<float>(commit.epoch), static_cast<float>(commit.step)};
  HORA_RETURN_IF_ERROR(broadcast_state_tensors({{"position", position, 2}}, "elastic/", 0));
  save(commit, state, static_cast<int64_t>(position[0]), static_cast<int64_t>(position[1]));
  return Status::OK();
}

// A failure that a reset recovers from: a peer died, stopped or left.
bool peer_failure(const Status& s) {
  return s.code() == StatusCode::kRemote || s.code() == StatusCode::kTimeout ||
         s.code() == StatusCode::kIo;
}

enum class Outcome { kDone, kHostsUpdated };

// What one generation's training works with.
struct Generation {
  const ElasticSpec& spec;
  const SplitDataset& data;
  Mlp& model;
  Optimizer& inner;
  DistributedOptimizer& dist;
  Commit& commit;
};

// Commits at the position (epoch, step); in an elastic job, then asks whether hosts were added.
StatusOr<bool> commit_and_check(Generation& g, int64_t epoch, int64_t step) {
  save(g.commit, training_state(g.model, g.inner), epoch, step);
  if (!elastic::enabled()) return false;
  return elastic::hosts_updated();
}

void maybe_fail(const ElasticSpec& spec, int64_t global_step) {
  for (const FailPoint& f : spec.fail_points) {
    if (f.generation == elastic::generation() && f.step == global_step && f.rank == rank()) {
      std::printf("train_mlp: worker pid %d (rank %d) raises signal %d at step %lld\n", getpid(),
                  rank(), f.signal, static_cast<long long>(global_step));
      std::fflush(stdout);
      raise(f.signal);
    }
  }
}

// Trains from the commit's position to the end, or until hosts were added.
StatusOr<Outcome> train_generation(Generation& g) {
  const ElasticSpec& spec = g.spec;
  HORA_ASSIGN_OR_RETURN(
      ShardedLoader loader,
      ShardedLoader::create(g.data.train, spec.global_batch, rank(), size(), spec.shuffle_seed));
  const int64_t steps = loader.steps_per_epoch();
  StepBuffers buffers;
  for (int64_t epoch = g.commit.epoch; epoch < spec.epochs; ++epoch) {
    for (int64_t step = epoch == g.commit.epoch ? g.commit.step : 0; step < steps; ++step) {
      maybe_fail(spec, epoch * steps + step);
      HORA_RETURN_IF_ERROR(g.dist.zero_grad());
      loader.load(epoch, step, buffers.x, buffers.labels);
      HORA_RETURN_IF_ERROR(forward_backward(g.model, buffers, g.dist.hook()).status());
      HORA_RETURN_IF_ERROR(g.dist.step());
      const bool commit_now = (epoch * steps + step + 1) % spec.commit_every == 0;
      if (commit_now && step + 1 < steps) {
        HORA_ASSIGN_OR_RETURN(bool updated, commit_and_check(g, epoch, step + 1));
        if (updated) return Outcome::kHostsUpdated;
      }
    }
    if (spec.verbose && rank() == 0)
      std::printf("train_mlp: epoch %lld/%d done on %d ranks (generation %lld)\n",
                  static_cast<long long>(epoch) + 1, spec.epochs, size(),
                  static_cast<long long>(elastic::generation()));
    HORA_ASSIGN_OR_RETURN(bool updated, commit_and_check(g, epoch + 1, 0));
    if (updated && epoch + 1 < spec.epochs) return Outcome::kHostsUpdated;
  }
  return Outcome::kDone;
}

}  // namespace

StatusOr<FailPoint> parse_fail_point(const std::string& text) {
  FailPoint f;
  std::istringstream in(text);
  char c1 = 0, c2 = 0, c3 = 0;
  std::string sig;
  if (!(in >> f.generation >> c1 >> f.step >> c2 >> f.rank >> c3) || c1 != ':' || c2 != ':' ||
      c3 != ':' || !(in >> sig) || (sig != "kill" && sig != "stop"))
    return Status::invalid_argument("--elastic-fail '" + text +
                                    "': expected GENERATION:STEP:RANK:kill or ...:stop");
  f.signal = sig == "kill" ? SIGKILL : SIGSTOP;
  return f;
}

StatusOr<ElasticResult> train_elastic(const ElasticSpec& spec, const SplitDataset& data, Mlp& model,
                                      Optimizer& inner) {
  ElasticResult result;
  Commit commit;
  bool hosts_updated = false;
  // One per generation: its reducer's handles belong to that generation's engine, so the old
  // one goes only after the reset stopped that engine (every handle then complete).
  std::unique_ptr<DistributedOptimizer> dist;
  for (Status failure;;) {
    if (!failure.ok() || hosts_updated) {
      if (!elastic::enabled() || (!hosts_updated && !peer_failure(failure))) return failure;
      if (!hosts_updated) restore(commit, training_state(model, inner));
      ++result.resets;
      HORA_RETURN_IF_ERROR(
          elastic::reset(hosts_updated, hosts_updated ? "hosts updated" : failure.to_string()));
      hosts_updated = false;
      if (spec.verbose)
        std::printf("train_mlp: worker pid %d is rank %d of %d in generation %lld\n", getpid(),
                    rank(), size(), static_cast<long long>(elastic::generation()));
    }
    failure = sync(model, inner, commit);
    if (!failure.ok()) continue;
    HORA_ASSIGN_OR_RETURN(dist, DistributedOptimizer::create(inner, spec.options));
    Generation g{spec, data, model, inner, *dist, commit};
    StatusOr<Outcome> outcome = train_generation(g);
    failure = outcome.status();
    hosts_updated = outcome.ok() && outcome.value() == Outcome::kHostsUpdated;
    if (outcome.ok() && !hosts_updated) break;
  }
  const int64_t correct = count_correct_rows(model, data.test, 0, data.test.count());
  result.final_accuracy =
      data.test.count() > 0 ? static_cast<double>(correct) / data.test.count() : 0.0;
  return result;
}

}  // namespace trainer
}  // namespace hora
