// DistributedOptimizer across processes (horarun -np N): the equivalence checks of
// data-parallel training against one process, broadcast, compression, local accumulation,
// Horovod's options and misuse errors. Each rank also computes the one-process reference
// itself (no communication), so every rank checks its own result.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "examples/trainer/adam.h"
#include "examples/trainer/sgd.h"
#include "examples/trainer/training.h"
#include "hora/broadcast.h"
#include "hora/distributed_optimizer.h"
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
constexpr double kEquivalence = 1e-5;  // the bound on the relative difference

const SplitDataset& data() {
  static const SplitDataset* set = [] {
    trainer::DatasetSpec spec;
    spec.train_count = 4096;
    spec.test_count = 1024;
    return new SplitDataset(trainer::make_dataset(spec).value());
  }();
  return *set;
}

enum class Kind { kSgd, kAdam };

std::unique_ptr<Optimizer> make(Kind kind, Mlp& model) {
  if (kind == Kind::kSgd) return Sgd::create(model.parameters(), {0.05, 0.9, 0.0}).value();
  return Adam::create(model.parameters(), {2e-3, 0.9, 0.999, 1e-8}).value();
}

std::vector<float> flat_values(Mlp& model) {
  std::vector<float> all;
  for (const Parameter& p : model.parameters()) all.insert(all.end(), p.value, p.value + p.count);
  return all;
}

// max over parameters of ||a - b|| / ||b||; rank 0 prints it with `what`.
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

// One process, batch `global_batch`, `steps` steps, from seed 7.
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

// This rank's part of a data-parallel run: `steps` optimizer steps of `passes` backward
// passes each, on micro-batches of global size `global_batch` (per rank global_batch/size).
Mlp train_distributed(Kind kind, int64_t global_batch, int steps, DistributedOptions options,
                      uint64_t seed = 7) {
  Mlp model = Mlp::create(kSizes, seed).value();
  std::unique_ptr<Optimizer> opt = make(kind, model);
  auto dist = DistributedOptimizer::create(*opt, options).value();
  EXPECT_TRUE(broadcast_parameters(model.parameters(), 0).ok());
  ShardedLoader loader =
      ShardedLoader::create(data().train, global_batch, rank(), size(), 3).value();
  StepBuffers b;
  const int passes = options.backward_passes_per_step;
  for (int s = 0; s < steps; ++s) {
    Status z = dist->zero_grad();
    EXPECT_TRUE(z.ok()) << z.to_string();
    for (int k = 0; k < passes; ++k) {
      loader.load(0, s * passes + k, b.x, b.labels);
      auto loss = trainer::forward_backward(model, b, dist->hook());
      EXPECT_TRUE(loss.ok()) << loss.status().to_string();
    }
    Status st = dist->step();
    EXPECT_TRUE(st.ok()) << st.to_string();
  }
  return model;
}

// True when `values` has the same bits on every rank (compared with rank 0's copy).
bool same_on_every_rank(const std::string& name, const std::vector<float>& values) {
  std::vector<float> root = values;
  StateTensor view{name, root.data(), static_cast<int64_t>(root.size())};
  Status s = broadcast_state_tensors({view}, "check/", 0);
  EXPECT_TRUE(s.ok()) << s.to_string();
  const int local_same =
      std::memcmp(root.data(), values.data(), values.size() * sizeof(float)) == 0 ? 1 : 0;
  auto all = allreduce_metrics(name + ".same", {static_cast<double>(local_same)}, ReduceOp::kMin);
  EXPECT_TRUE(all.ok()) << all.status().to_string();
  return all.ok() && all.value()[0] == 1.0;
}

// N ranks with per-rank batch 12 against one process with batch 12 N.
int64_t global_batch() { return 12 * size(); }
constexpr int kSteps = 8;

TEST(DistributedOptimizerMp, SgdMatchesOneProcessWithTheWholeBatch) {
  Mlp reference = train_reference(Kind::kSgd, global_batch(), kSteps);
  Mlp distributed = train_distributed(Kind::kSgd, global_batch(), kSteps, {});
  EXPECT_LE(max_relative_difference(distributed, reference, "sgd"), kEquivalence)
      << "size " << size();
}

TEST(DistributedOptimizerMp, AdamMatchesOneProcessWithTheWholeBatch) {
  Mlp reference = train_reference(Kind::kAdam, global_batch(), kSteps);
  Mlp distributed = train_distributed(Kind::kAdam, global_batch(), kSteps, {});
  EXPECT_LE(max_relative_difference(distributed, reference, "adam"), kEquivalence)
      << "size " << size();
}

TEST(DistributedOptimizerMp, PredivideAndNoOverlapGiveTheSameResult) {
  Mlp reference = train_reference(Kind::kSgd, global_batch(), kSteps);
  DistributedOptions predivide;
  predivide.gradient_predivide_factor = 4.0;
  Mlp a = train_distributed(Kind::kSgd, global_batch(), kSteps, predivide);
  EXPECT_LE(max_relative_difference(a, reference, "predivide 4"), kEquivalence);
  DistributedOptions after_backward;
  after_backward.overlap_backward = false;
  Mlp b = train_distributed(Kind::kSgd, global_batch(), kSteps, after_backward);
  EXPECT_LE(max_relative_difference(b, reference, "no overlap"), kEquivalence);
}

TEST(DistributedOptimizerMp, FourBackwardPassesEqualOneStepOnFourTimesTheBatch) {
  // Micro-batch s*4+k of global size 12*size covers, over k, exactly batch s of size 48*size.
  const int64_t micro = 12 * size();
  Mlp reference = train_reference(Kind::kSgd, 4 * micro, 4);
  DistributedOptions options;
  options.backward_passes_per_step = 4;
  options.average_aggregated_gradients = true;
  Mlp distributed = train_distributed(Kind::kSgd, micro, 4, options);
  EXPECT_LE(max_relative_difference(distributed, reference, "backward_passes_per_step 4"),
            kEquivalence)
      << "size " << size();
}

TEST(DistributedOptimizerMp, DifferentSeedsAreIdenticalAfterBroadcastAndEveryStep) {
  Mlp model = Mlp::create(kSizes, 100 + rank()).value();
  std::unique_ptr<Optimizer> adam = make(Kind::kAdam, model);
  auto dist = DistributedOptimizer::create(*adam).value();
  // Give each rank its own optimizer state too, so the state broadcast has work to do.
  for (const StateTensor& s : adam->state())
    std::fill(s.data, s.data + s.count, 0.001f * static_cast<float>(rank() + 1));
  if (size() > 1) {
    EXPECT_FALSE(same_on_every_rank("before", flat_values(model)));
  }
  ASSERT_TRUE(broadcast_parameters(model.parameters(), 0).ok());
  ASSERT_TRUE(broadcast_optimizer_state(*dist, 0).ok());
  EXPECT_TRUE(same_on_every_rank("after", flat_values(model)));
  ShardedLoader loader = ShardedLoader::create(data().train, 8 * size(), rank(), size(), 5).value();
  StepBuffers b;
  for (int s = 0; s < 5; ++s) {
    ASSERT_TRUE(dist->zero_grad().ok());
    loader.load(0, s, b.x, b.labels);
    ASSERT_TRUE(trainer::forward_backward(model, b, dist->hook()).ok());
    ASSERT_TRUE(dist->step().ok());
    EXPECT_TRUE(same_on_every_rank("step" + std::to_string(s), flat_values(model))) << "step " << s;
    std::vector<float> state;
    for (const StateTensor& t : adam->state()) state.insert(state.end(), t.data, t.data + t.count);
    EXPECT_TRUE(same_on_every_rank("state" + std::to_string(s), state)) << "step " << s;
  }
}

// Trains 256 steps (per-rank batch 32, so as many or more samples on more ranks) with
// `compression` and returns the held-out accuracy.
double accuracy_with(Compression compression) {
  Mlp model = Mlp::create(kSizes, 7).value();
  std::unique_ptr<Optimizer> opt = make(Kind::kSgd, model);
  DistributedOptions options;
  options.compression = compression;
  auto dist = DistributedOptimizer::create(*opt, options).value();
  ShardedLoader loader =
      ShardedLoader::create(data().train, 32 * size(), rank(), size(), 11).value();
  StepBuffers b;
  for (int64_t step = 0; step < 256; ++step) {
    EXPECT_TRUE(dist->zero_grad().ok());
    loader.load(step / loader.steps_per_epoch(), step % loader.steps_per_epoch(), b.x, b.labels);
    EXPECT_TRUE(trainer::forward_backward(model, b, dist->hook()).ok());
    Status st = dist->step();
    EXPECT_TRUE(st.ok()) << st.to_string();
  }
  const trainer::Dataset& test = data().test;
  return static_cast<double>(trainer::count_correct_rows(model, test, 0, test.count())) /
         test.count();
}

TEST(DistributedOptimizerMp, Fp16AndBf16CompressionStillConverge) {
  constexpr double kMargin = 0.03;  // within 3 points of the uncompressed accuracy
  const double plain = accuracy_with(Compression::kNone);
  const double fp16 = accuracy_with(Compression::kFloat16);
  const double bf16 = accuracy_with(Compression::kBFloat16);
  if (rank() == 0)
    std::printf("held-out accuracy after 256 steps on %d ranks: none %.4f, fp16 %.4f, bf16 %.4f\n",
                size(), plain, fp16, bf16);
  EXPECT_GT(plain, 0.8);  // chance is 0.1
  EXPECT_GE(fp16, plain - kMargin) << "uncompressed " << plain;
  EXPECT_GE(bf16, plain - kMargin) << "uncompressed " << plain;
}

// A hand-made optimizer over two small gradients, to see exactly what the reduction did.
class Recorder : public Optimizer {
 public:
  Recorder() : value_(3, 0.0f), grad_(3, 0.0f) {
    params_ = {{"a", value_.data(), grad_.data(), 2},
               {"b", value_.data() + 2, grad_.data() + 2, 1}};
  }
  const char* name() const override { return "recorder"; }
  const std::vector<Parameter>& parameters() const override { return params_; }
  Status zero_grad() override {
    std::fill(grad_.begin(), grad_.end(), 0.0f);
    return Status::OK();
  }
  Status step() override {
    ++steps;
    return Status::OK();
  }
  std::vector<StateTensor> state() override { return {}; }
  std::vector<float> grad() const { return grad_; }
  void set_grad(float v) { std::fill(grad_.begin(), grad_.end(), v); }
  int steps = 0;

 private:
  std::vector<float> value_, grad_;
  std::vector<Parameter> params_;
};

TEST(DistributedOptimizerMp, SumAndCompressedSumAreExact) {
  const float n = static_cast<float>(size());
  for (Compression c : {Compression::kNone, Compression::kFloat16, Compression::kBFloat16}) {
    Recorder rec;
    DistributedOptions options;
    options.op = ReduceOp::kSum;
    options.compression = c;
    auto dist = DistributedOptimizer::create(rec, options).value();
    rec.set_grad(static_cast<float>(rank() + 1));
    ASSERT_TRUE(dist->gradient_ready("a").ok());
    // "b" never reported: step() reduces it anyway (as Horovod does for unused parameters).
    ASSERT_TRUE(dist->step().ok());
    EXPECT_EQ(rec.grad(), std::vector<float>(3, n * (n + 1) / 2)) << compression_name(c);
    EXPECT_EQ(rec.steps, 1);
  }
}

// The test above uses small integers, which every type holds exactly, so it cannot tell
// whether the cast happened. Here every rank's gradient is a quarter of the half type's
// spacing above 1 (float16: 1 + 2^-12, spacing 2^-10; bfloat16: 1 + 2^-9, spacing 2^-7):
// float32 holds it, the half type rounds it to 1. Compressed, the result is the rounded
// value reduced (n for a sum, 1 for an average); uncompressed, it keeps the low bits.
TEST(DistributedOptimizerMp, CompressionRoundsToTheHalfType) {
  struct Case {
    Compression compression;
    float value;    // exact in float32
    float rounded;  // the value in the half type
  };
  const Case cases[] = {{Compression::kFloat16, 1.0f + std::ldexp(1.0f, -12), 1.0f},
                        {Compression::kBFloat16, 1.0f + std::ldexp(1.0f, -9), 1.0f}};
  const float n = static_cast<float>(size());
  // Runs one step with `compression` and `op`, every gradient `value` on every rank.
  auto reduce = [](Compression compression, ReduceOp op, float value) {
    Recorder rec;
    DistributedOptions options;
    options.op = op;
    options.compression = compression;
    auto dist = DistributedOptimizer::create(rec, options).value();
    rec.set_grad(value);
    Status s = dist->step();
    EXPECT_TRUE(s.ok()) << s.to_string();
    return rec.grad();
  };
  for (const Case& c : cases) {
    const char* what = compression_name(c.compression);
    // Sum: exact in both types (at most 5 ranks' addends of 1 + 2^-9 need 12 bits).
    EXPECT_EQ(reduce(c.compression, ReduceOp::kSum, c.value), std::vector<float>(3, n * c.rounded))
        << what;
    EXPECT_EQ(reduce(Compression::kNone, ReduceOp::kSum, c.value),
              std::vector<float>(3, n * c.value))
        << what;
    // Average: the half type's n * (1/n) rounds back to exactly 1; float32's keeps the
    // value to within its last bits (the 1/n postscale may round), far from 1.
    EXPECT_EQ(reduce(c.compression, ReduceOp::kAverage, c.value), std::vector<float>(3, c.rounded))
        << what;
    for (float g : reduce(Compression::kNone, ReduceOp::kAverage, c.value))
      EXPECT_FLOAT_EQ(g, c.value) << what;
  }
}

TEST(DistributedOptimizerMp, MisuseIsAClearError) {
  Recorder rec;
  auto dist = DistributedOptimizer::create(rec).value();
  Status s = dist->gradient_ready("c");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'c'"), std::string::npos) << s.to_string();

  ASSERT_TRUE(dist->gradient_ready("a").ok());
  s = dist->gradient_ready("a");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("more than backward_passes_per_step (1)"), std::string::npos)
      << s.to_string();
  s = dist->zero_grad();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("zero_grad() called after backward but before step()"),
            std::string::npos)
      << s.to_string();
  ASSERT_TRUE(dist->step().ok());  // every rank drains the same collectives
  EXPECT_TRUE(dist->zero_grad().ok());

  DistributedOptions accumulate;
  accumulate.backward_passes_per_step = 2;
  auto two = DistributedOptimizer::create(rec, accumulate).value();
  EXPECT_TRUE(two->gradient_ready("a").ok());
  EXPECT_TRUE(two->gradient_ready("a").ok());
  EXPECT_EQ(two->gradient_ready("a").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(two->zero_grad().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(two->step().ok());
}

TEST(DistributedOptimizerMp, CreateRejectsBadNamesAndOptions) {
  Recorder rec;
  DistributedOptions bad;
  bad.backward_passes_per_step = 0;
  EXPECT_EQ(DistributedOptimizer::create(rec, bad).status().code(), StatusCode::kInvalidArgument);
  bad = {};
  bad.op = ReduceOp::kMax;
  EXPECT_EQ(DistributedOptimizer::create(rec, bad).status().code(), StatusCode::kInvalidArgument);
  bad = {};
  bad.op = ReduceOp::kSum;
  bad.gradient_predivide_factor = 2.0;
  Status s = DistributedOptimizer::create(rec, bad).status();
  EXPECT_NE(s.message().find("needs op average"), std::string::npos) << s.to_string();

  // Any Optimizer may hand over bad names (Sgd and Adam reject them themselves).
  std::vector<float> v(2), g(2);
  class Fixed : public Recorder {
   public:
    explicit Fixed(std::vector<Parameter> p) : p_(std::move(p)) {}
    const std::vector<Parameter>& parameters() const override { return p_; }
    std::vector<Parameter> p_;
  };
  Fixed dup({{"w", v.data(), g.data(), 1}, {"w", v.data() + 1, g.data() + 1, 1}});
  s = DistributedOptimizer::create(dup).status();
  EXPECT_NE(s.message().find("'w' appears twice"), std::string::npos) << s.to_string();
  Fixed unnamed({{"", v.data(), g.data(), 1}});
  s = DistributedOptimizer::create(unnamed).status();
  EXPECT_NE(s.message().find("has no name"), std::string::npos) << s.to_string();
}

TEST(DistributedOptimizerMp, AverageMetricAndRootChecks) {
  auto mean = average_metric("rank", static_cast<double>(rank()));
  ASSERT_TRUE(mean.ok()) << mean.status().to_string();
  EXPECT_DOUBLE_EQ(mean.value(), (size() - 1) / 2.0);
  Status s = broadcast_parameters({}, size());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("root " + std::to_string(size())), std::string::npos) << s.to_string();
}

}  // namespace
}  // namespace hora
