// GradsAndVarsOptimizer across processes (horarun -np N): the (gradient, variable) list of a
// step reduced as one group and applied equals one process at the global batch; separate
// gradient buffers, local accumulation, a partial list, and misuse. Each rank computes the
// one-process reference itself, so every rank checks its own result.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "examples/trainer/adam.h"
#include "examples/trainer/sgd.h"
#include "examples/trainer/training.h"
#include "hora/broadcast.h"
#include "hora/grads_and_vars_optimizer.h"
#include "hora/hora.h"

namespace hora {
namespace {

using trainer::Adam;
using trainer::Mlp;
using trainer::Sgd;
using trainer::ShardedLoader;
using trainer::SplitDataset;
using trainer::StepBuffers;

const std::vector<int64_t> kSizes = {32, 64, 64, 10};
constexpr double kEquivalence = 1e-5;
constexpr int kSteps = 8;

const SplitDataset& data() {
  static const SplitDataset* set = [] {
    trainer::DatasetSpec spec;
    spec.train_count = 4096;
    spec.test_count = 256;
    return new SplitDataset(trainer::make_dataset(spec).value());
  }();
  return *set;
}

enum class Kind { kSgd, kAdam, kPlainSgd };

std::unique_ptr<Optimizer> make(Kind kind, Mlp& model) {
  if (kind == Kind::kSgd) return Sgd::create(model.parameters(), {0.05, 0.9, 0.0}).value();
  if (kind == Kind::kPlainSgd) return Sgd::create(model.parameters(), {0.05, 0.0, 0.0}).value();
  return Adam::create(model.parameters(), {2e-3, 0.9, 0.999, 1e-8}).value();
}

// max over parameters of ||a - b|| / ||b||.
double max_relative_difference(Mlp& a, Mlp& b, const char* what) {
  std::vector<Parameter> pa = a.parameters(), pb = b.parameters();
  double worst = 0.0;
  for (size_t i = 0; i < pa.size(); ++i) {
    double diff = 0.0, norm = 0.0;
    for (int64_t j = 0; j < pa[i].count; ++j) {
      const double d = static_cast<double>(pa[i].value[j]) - pb[i].value[j];
      diff += d * d;
      norm += static_cast<double>(pb[i].value[j]) * pb[i].value[j];
    }
    worst = std::max(worst, std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30));
  }
  if (rank() == 0) std::printf("%s: %d ranks, max relative difference %.3g\n", what, size(), worst);
  return worst;
}

Mlp train_reference(Kind kind, int64_t global_batch, int steps) {
  Mlp model = Mlp::create(kSizes, 7).value();
  std::unique_ptr<Optimizer> opt = make(kind, model);
  ShardedLoader loader = ShardedLoader::create(data().train, global_batch, 0, 1, 3).value();
  StepBuffers b;
  for (int s = 0; s < steps; ++s) {
    loader.load(0, s, b.x, b.labels);
    EXPECT_TRUE(opt->zero_grad().ok());
    EXPECT_TRUE(trainer::forward_backward(model, b, nullptr).ok());
    EXPECT_TRUE(opt->step().ok());
  }
  return model;
}

// `steps` applied steps of `passes` backward passes each, per-rank batch global_batch/size.
// `separate`: the gradients are handed over in buffers of their own, not the model's.
Mlp train_distributed(Kind kind, int64_t global_batch, int steps, DistributedOptions options,
                      bool separate = false) {
  Mlp model = Mlp::create(kSizes, 7).value();
  std::unique_ptr<Optimizer> opt = make(kind, model);
  auto dist = GradsAndVarsOptimizer::create(*opt, options).value();
  EXPECT_TRUE(broadcast_parameters(model.parameters(), 0).ok());
  ShardedLoader loader =
      ShardedLoader::create(data().train, global_batch, rank(), size(), 3).value();
  StepBuffers b;
  std::vector<std::vector<float>> own(model.parameters().size());
  const int passes = options.backward_passes_per_step;
  for (int s = 0; s < steps; ++s) {
    EXPECT_TRUE(dist->zero_grad().ok());
    for (int k = 0; k < passes; ++k) {
      loader.load(0, s * passes + k, b.x, b.labels);
      EXPECT_TRUE(trainer::forward_backward(model, b, nullptr).ok());
      std::vector<GradAndVar> list = dist->compute_gradients();
      if (separate) {
        for (size_t i = 0; i < list.size(); ++i) {
          const Parameter p = model.parameters()[i];  // a copy: parameters() returns by value
          own[i].assign(p.grad, p.grad + p.count);
          std::fill(p.grad, p.grad + p.count, -1.0f);  // must be overwritten by the step
          list[i].grad = own[i].data();
        }
      }
      Status st = dist->apply_gradients(list);
      EXPECT_TRUE(st.ok()) << st.to_string();
    }
  }
  return model;
}

int64_t global_batch() { return 12 * size(); }

TEST(GradsAndVarsMp, SgdMatchesOneProcessWithTheWholeBatch) {
  Mlp reference = train_reference(Kind::kSgd, global_batch(), kSteps);
  Mlp distributed = train_distributed(Kind::kSgd, global_batch(), kSteps, {});
  EXPECT_LE(max_relative_difference(distributed, reference, "grads_and_vars sgd"), kEquivalence);
}

TEST(GradsAndVarsMp, AdamMatchesOneProcessWithTheWholeBatch) {
  Mlp reference = train_reference(Kind::kAdam, global_batch(), kSteps);
  Mlp distributed = train_distributed(Kind::kAdam, global_batch(), kSteps, {});
  EXPECT_LE(max_relative_difference(distributed, reference, "grads_and_vars adam"), kEquivalence);
}

TEST(GradsAndVarsMp, SeparateGradientBuffersAreCopiedIntoTheParameters) {
  Mlp reference = train_reference(Kind::kAdam, global_batch(), kSteps);
  Mlp distributed = train_distributed(Kind::kAdam, global_batch(), kSteps, {}, true);
  EXPECT_LE(max_relative_difference(distributed, reference, "separate buffers"), kEquivalence);
}

TEST(GradsAndVarsMp, FourPassesEqualOneStepOnFourTimesTheBatch) {
  const int64_t micro = 12 * size();
  Mlp reference = train_reference(Kind::kSgd, 4 * micro, 4);
  DistributedOptions options;
  options.backward_passes_per_step = 4;
  options.average_aggregated_gradients = true;
  Mlp distributed = train_distributed(Kind::kSgd, micro, 4, options);
  EXPECT_LE(max_relative_difference(distributed, reference, "grads_and_vars 4 passes"),
            kEquivalence);
}

TEST(GradsAndVarsMp, TheListGoesAsOneBucketPerStep) {
  Mlp model = Mlp::create(kSizes, 7).value();
  std::unique_ptr<Optimizer> opt = make(Kind::kSgd, model);
  auto dist = GradsAndVarsOptimizer::create(*opt).value();
  ShardedLoader loader = ShardedLoader::create(data().train, 8 * size(), rank(), size(), 3).value();
  StepBuffers b;
  const EngineStats before = engine_stats();
  for (int s = 0; s < 3; ++s) {
    ASSERT_TRUE(dist->zero_grad().ok());
    loader.load(0, s, b.x, b.labels);
    ASSERT_TRUE(trainer::forward_backward(model, b, nullptr).ok());
    ASSERT_TRUE(dist->step().ok());
  }
  const EngineStats after = engine_stats();
  EXPECT_EQ(after.buckets - before.buckets, 3);
  EXPECT_EQ(after.errors, before.errors);
}

TEST(GradsAndVarsMp, AnUnlistedVariableGetsNoGradient) {
  Mlp model = Mlp::create(kSizes, 7).value();
  std::unique_ptr<Optimizer> opt = make(Kind::kPlainSgd, model);
  auto dist = GradsAndVarsOptimizer::create(*opt).value();
  ShardedLoader loader = ShardedLoader::create(data().train, 8 * size(), rank(), size(), 3).value();
  StepBuffers b;
  const Parameter last = model.parameters().back();
  const std::vector<float> kept(last.value, last.value + last.count);
  for (int s = 0; s < 2; ++s) {
    ASSERT_TRUE(dist->zero_grad().ok());
    loader.load(0, s, b.x, b.labels);
    ASSERT_TRUE(trainer::forward_backward(model, b, nullptr).ok());
    std::vector<GradAndVar> list = dist->compute_gradients();
    list.pop_back();
    Status st = dist->apply_gradients(list);
    ASSERT_TRUE(st.ok()) << st.to_string();
  }
  EXPECT_EQ(std::vector<float>(last.value, last.value + last.count), kept);
}

TEST(GradsAndVarsMp, MisuseIsAClearError) {
  Mlp model = Mlp::create(kSizes, 7).value();
  std::unique_ptr<Optimizer> opt = make(Kind::kSgd, model);
  DistributedOptions two;
  two.backward_passes_per_step = 2;
  auto dist = GradsAndVarsOptimizer::create(*opt, two).value();
  std::vector<GradAndVar> list = dist->compute_gradients();

  std::vector<GradAndVar> unknown = {GradAndVar{list[0].grad, "no.such.variable"}};
  Status s = dist->apply_gradients(unknown);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("no.such.variable"), std::string::npos) << s.to_string();

  std::vector<GradAndVar> twice = {list[0], list[0]};
  s = dist->apply_gradients(twice);
  EXPECT_NE(s.message().find("listed twice"), std::string::npos) << s.to_string();

  std::vector<float> elsewhere(static_cast<size_t>(model.parameters()[0].count));
  std::vector<GradAndVar> separate = {GradAndVar{elsewhere.data(), list[0].var}};
  s = dist->apply_gradients(separate);
  EXPECT_NE(s.message().find("own grad buffer"), std::string::npos) << s.to_string();

  ASSERT_TRUE(dist->apply_gradients(list).ok());  // pass 1 of 2: counted only
  s = dist->zero_grad();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.to_string();
  ASSERT_TRUE(dist->apply_gradients(list).ok());  // pass 2: reduces and applies
  EXPECT_TRUE(dist->zero_grad().ok());

  DistributedOptions bad;
  bad.backward_passes_per_step = 0;
  EXPECT_EQ(GradsAndVarsOptimizer::create(*opt, bad).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hora
