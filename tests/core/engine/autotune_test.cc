// The autotuner's parts (HORA_AUTOTUNE=1): the Gaussian process and expected improvement
// converge on known functions; the sample scorer drops warm-up steps and takes the median of
// its windows; the CSV log round-trips and its best row pins a later run's Config; values the
// user set are left out of the search (Config's part: config_test); and on in-process ranks, every
// rank applies the same configuration at the same step however differently its clock runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "core/engine/autotune_log.h"
#include "core/engine/autotuner.h"
#include "core/engine/bayes_opt.h"
#include "core/engine/parameter_manager.h"
#include "tests/support/multi_rank.h"

namespace hora {
namespace engine {
namespace {

TEST(GaussianProcess, InterpolatesItsSamples) {
  GaussianProcess gp(0.25, 1e-6);
  const std::vector<std::vector<double>> x = {{0.1}, {0.5}, {0.9}};
  const std::vector<double> y = {1.0, 3.0, 2.0};
  ASSERT_TRUE(gp.fit(x, y));
  for (size_t i = 0; i < x.size(); ++i) {
    double mu = 0, sd = 0;
    gp.predict(x[i], &mu, &sd);
    EXPECT_NEAR(mu, y[i], 1e-3);
    EXPECT_LT(sd, 0.01);
  }
  double mu = 0, far_sd = 0;
  gp.predict({0.3}, &mu, &far_sd);
  EXPECT_GT(far_sd, 0.05);  // between samples the model is unsure
}

TEST(GaussianProcess, ExpectedImprovementGrowsWithMeanAndUncertainty) {
  EXPECT_GT(expected_improvement(2.0, 0.1, 1.0, 0.0), expected_improvement(1.5, 0.1, 1.0, 0.0));
  EXPECT_GT(expected_improvement(1.0, 1.0, 1.0, 0.0), expected_improvement(1.0, 0.1, 1.0, 0.0));
  EXPECT_NEAR(expected_improvement(0.0, 0.0, 1.0, 0.0), 0.0, 1e-12);
}

// Maximises f over [0,1]^d in `n` samples; returns the best point found.
template <typename F>
std::vector<double> optimise(int d, int n, F f) {
  BayesianOptimizer opt(d);
  std::vector<double> x(static_cast<size_t>(d), 0.5);
  for (int i = 0; i < n; ++i) {
    opt.add_sample(x, f(x));
    x = opt.suggest();
  }
  return opt.xs()[opt.best_index()];
}

TEST(BayesianOptimizer, FindsTheMaximumOfAOneDimensionalFunction) {
  auto f = [](const std::vector<double>& x) { return -std::pow(x[0] - 0.73, 2); };
  const std::vector<double> best = optimise(1, 12, f);
  EXPECT_NEAR(best[0], 0.73, 0.05);
}

TEST(BayesianOptimizer, FindsTheMaximumOfATwoDimensionalFunctionInTwentySamples) {
  // A smooth bump, like throughput over (log fusion threshold, log cycle time).
  auto f = [](const std::vector<double>& x) {
    return std::exp(-(std::pow(x[0] - 0.8, 2) + std::pow(x[1] - 0.2, 2)) / 0.1);
  };
  const std::vector<double> best = optimise(2, 20, f);
  EXPECT_GT(f(best), 0.95) << best[0] << " " << best[1];
}

TEST(BayesianOptimizer, IsDeterministicForTheSameSamples) {
  BayesianOptimizer a(2), b(2);
  for (BayesianOptimizer* o : {&a, &b}) {
    o->add_sample({0.1, 0.2}, 1.0);
    o->add_sample({0.7, 0.4}, 2.0);
  }
  EXPECT_EQ(a.suggest(), b.suggest());
}

TEST(SampleScorer, DropsWarmupAndTakesTheMedianOfWindows) {
  SampleScorer s(/*warmup=*/2, /*window=*/2);
  s.add(1000, 0.001);  // warm-up: would score 1e6
  s.add(1000, 0.001);
  EXPECT_EQ(s.complete_windows(), 0);
  EXPECT_EQ(s.score(), 0.0);
  s.add(100, 1.0);  // window 1: 200 B / 2 s = 100
  s.add(100, 1.0);
  s.add(100, 0.01);  // window 2: one noisy fast step: 200 / 1.01
  s.add(100, 1.0);
  s.add(300, 1.0);  // window 3: 600 / 2 = 300
  s.add(300, 1.0);
  s.add(1, 1.0);  // incomplete window: not counted
  EXPECT_EQ(s.complete_windows(), 3);
  EXPECT_NEAR(s.score(), 200 / 1.01, 1e-9);  // the median, not the best window
  s.reset();
  EXPECT_EQ(s.complete_windows(), 0);
}

TEST(AutotuneLog, RowsRoundTripAndTheBestIsRead) {
  const std::string path = ::testing::TempDir() + "autotune_log_test.csv";
  AutotuneRow a;
  a.values.fusion_threshold_bytes = 65536;
  a.values.cycle_time_ms = 0.25;
  a.values.cache_enabled = false;
  a.score = 1.5e9;
  a.sample = 0;
  a.step = 11;
  a.window_steps = 3;
  a.windows = 3;
  a.algorithms = "2^14:ring 2^20:rd";
  AutotuneRow best = a;
  best.values.fusion_threshold_bytes = 8 << 20;
  best.values.cache_enabled = true;
  best.sample = -1;
  {
    AutotuneLogWriter w;
    ASSERT_TRUE(w.open(path).ok());
    w.write(a);
    w.write(best);
  }
  std::ifstream in(path);
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("hierarchical_allreduce,hierarchical_allgather,torus_allreduce,"
                         "cache_enabled,cycle_time_ms,tensor_fusion_threshold,score",
                         0),
            0u);
  std::getline(in, line);
  StatusOr<AutotuneRow> back = parse_autotune_csv_row(line);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->values, a.values);
  EXPECT_DOUBLE_EQ(back->score, a.score);
  EXPECT_EQ(back->sample, 0);
  EXPECT_EQ(back->step, 11);
  EXPECT_EQ(back->algorithms, a.algorithms);
  StatusOr<AutotuneRow> last = read_autotune_best(path);
  ASSERT_TRUE(last.ok()) << last.status().to_string();
  EXPECT_EQ(last->values, best.values);
  EXPECT_EQ(last->sample, -1);
  std::remove(path.c_str());
}

TEST(AutotuneLog, BadFilesAndRowsNameTheProblem) {
  StatusOr<AutotuneRow> missing = read_autotune_best("/nonexistent/dir/log.csv");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/dir/log.csv"), std::string::npos);
  const std::string path = ::testing::TempDir() + "autotune_bad_log.csv";
  { std::ofstream(path) << "a,b,c\n1,2,3\n"; }
  StatusOr<AutotuneRow> bad = read_autotune_best(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("expected an autotune log"), std::string::npos);
  { std::ofstream(path) << autotune_csv_header() << "\n"; }
  EXPECT_FALSE(read_autotune_best(path).ok());
  std::remove(path.c_str());
  StatusOr<AutotuneRow> row = parse_autotune_csv_row("0,0,0,2,1,65536,1,0,1,3,3,");
  ASSERT_FALSE(row.ok());
  EXPECT_NE(row.status().message().find("0,0,0,2,1,65536"), std::string::npos);
}

ParameterManagerOptions small_schedule() {
  ParameterManagerOptions o;
  o.start.fusion_threshold_bytes = 64 << 10;
  o.warmup_steps = 1;
  o.window_steps = 1;
  o.windows = 3;
  o.max_samples = 12;
  return o;
}

// Runs the manager against a modelled step time; returns the final configuration.
template <typename StepSeconds>
AutotuneValues run_manager(ParameterManager& m, StepSeconds step_seconds) {
  int64_t step = 0;
  while (!m.converged()) {
    for (int i = 0; i < m.steps_per_sample(); ++i) m.on_step(1 << 20, step_seconds(m.current()));
    m.finish_sample(step += m.steps_per_sample());
  }
  return m.current();
}

TEST(ParameterManager, StartsFromTheJobsConfigurationAndConvergesOnTheBest) {
  ParameterManager m(small_schedule());
  EXPECT_EQ(m.current().fusion_threshold_bytes, 64 << 10);
  // Faster with a larger threshold (fewer, larger allreduces) up to 32 MiB, with the cache,
  // and with a short cycle time.
  auto seconds = [](const AutotuneValues& v) {
    const double f = std::log2(static_cast<double>(v.fusion_threshold_bytes));
    return 1.0 + 0.05 * std::fabs(f - 25) + (v.cache_enabled ? 0 : 0.3) + 0.02 * v.cycle_time_ms;
  };
  const AutotuneValues best = run_manager(m, seconds);
  EXPECT_EQ(m.samples(), 12 + 4);  // the search, then the best against the start twice each
  EXPECT_TRUE(best.cache_enabled);
  EXPECT_LT(seconds(best), seconds(small_schedule().start) * 0.8);
  EXPECT_EQ(m.best().values, best);
}

TEST(ParameterManager, KeepsTheStartUnlessTheBestBeatsItSideBySide) {
  // The start is fastest, but one sample of another configuration measures luckily fast (the
  // machine was quiet then): the confirmation, alternating the two, keeps the start.
  ParameterManagerOptions o = small_schedule();
  o.start.fusion_threshold_bytes = 8 << 20;
  o.tune_cycle = false;
  o.tune_cache = false;
  ParameterManager m(o);
  const AutotuneValues final_values = run_manager(m, [&](const AutotuneValues& v) {
    if (m.samples() == 3) return 0.5;  // the lucky sample
    return v == o.start ? 1.0 : 1.2;
  });
  EXPECT_EQ(final_values, o.start);
  EXPECT_EQ(m.samples(), 12 + 4);
  EXPECT_EQ(m.best().values, o.start);
}

TEST(ParameterManager, LeavesValuesTheUserSetAlone) {
  ParameterManagerOptions o = small_schedule();
  o.start.cycle_time_ms = 3.5;
  o.start.cache_enabled = false;
  o.tune_cycle = false;
  o.tune_cache = false;
  ParameterManager m(o);
  const AutotuneValues best =
      run_manager(m, [](const AutotuneValues& v) { return v.cycle_time_ms + 0.0; });
  EXPECT_DOUBLE_EQ(best.cycle_time_ms, 3.5);
  EXPECT_FALSE(best.cache_enabled);
  EXPECT_EQ(m.to_point(best).size(), 1u);  // only the fusion threshold was searched
  o.tune_fusion = false;
  EXPECT_FALSE(ParameterManager(o).tunes_anything());
}

TEST(ParameterManager, PointsMapToRoundValuesWithinTheRanges) {
  ParameterManager m(small_schedule());
  const AutotuneValues lo = m.from_point({0.0, 0.0, 0.0});
  const AutotuneValues hi = m.from_point({1.0, 1.0, 1.0});
  EXPECT_EQ(lo.fusion_threshold_bytes, ParameterManager::kMinFusion);
  EXPECT_EQ(hi.fusion_threshold_bytes, ParameterManager::kMaxFusion);
  EXPECT_DOUBLE_EQ(lo.cycle_time_ms, ParameterManager::kMinCycleMs);
  EXPECT_DOUBLE_EQ(hi.cycle_time_ms, ParameterManager::kMaxCycleMs);
  EXPECT_FALSE(lo.cache_enabled);
  EXPECT_TRUE(hi.cache_enabled);
  const AutotuneValues mid = m.from_point({0.37, 0.61, 0.2});
  EXPECT_EQ(mid.fusion_threshold_bytes % 1024, 0);
  EXPECT_EQ(m.from_point(m.to_point(mid)), mid);
}

// A list of `n` allreduces named g0..g{n-1}, 4 KiB each.
ResponseList step_list(int n) {
  ResponseList list;
  for (int i = 0; i < n; ++i) {
    Response r;
    r.name = "g" + std::to_string(i);
    r.dtype = DataType::kFloat32;
    r.shape = SmallShape({1024});
    list.responses.push_back(r);
  }
  return list;
}

TEST(Autotuner, EveryRankAppliesTheSameValuesAtTheSameStep) {
  constexpr int kRanks = 3;
  std::mutex mu;
  std::vector<std::vector<AutotuneState::Change>> histories(kRanks);
  Status s = test_support::run_ranks(kRanks, [&](collectives::Communicator& comm) -> Status {
    AutotunerOptions o;
    o.enabled = true;
    o.timeout_s = 60;
    o.manager = small_schedule();
    o.manager.max_samples = 5;
    o.manager.confirm_samples = 0;
    int applied = 0;
    Autotuner tuner(
        comm, o, [&](const AutotuneValues&) { ++applied; }, nullptr);
    // Each round agrees half a step.
    const ResponseList first = step_list(4);
    ResponseList a, b;
    a.responses.assign(first.responses.begin(), first.responses.begin() + 2);
    b.responses.assign(first.responses.begin() + 2, first.responses.end());
    for (int step = 0; step < 200 && tuner.active(); ++step) {
      HORA_RETURN_IF_ERROR(tuner.after_round(a));
      HORA_RETURN_IF_ERROR(tuner.after_round(b));
    }
    const AutotuneState st = tuner.state();
    if (!st.converged || st.samples != 5 || applied != 5)
      return Status::internal("rank " + std::to_string(comm.rank()) + ": not converged after " +
                              std::to_string(st.samples) + " samples");
    std::lock_guard<std::mutex> lock(mu);
    histories[comm.rank()] = st.history;
    return Status::OK();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  ASSERT_EQ(histories[0].size(), 5u);
  for (int r = 1; r < kRanks; ++r) {
    ASSERT_EQ(histories[r].size(), histories[0].size());
    for (size_t i = 0; i < histories[0].size(); ++i) {
      EXPECT_EQ(histories[r][i].step, histories[0][i].step);
      EXPECT_EQ(histories[r][i].fusion_threshold_bytes, histories[0][i].fusion_threshold_bytes);
      EXPECT_EQ(histories[r][i].cycle_time_ms, histories[0][i].cycle_time_ms);
      EXPECT_EQ(histories[r][i].cache_enabled, histories[0][i].cache_enabled);
    }
  }
  // A sample lasts 1 + 3 steps; the first boundary is the second step's first allreduce.
  EXPECT_EQ(histories[0][0].step, 4);
  EXPECT_EQ(histories[0][4].step, 20);
}

}  // namespace
}  // namespace engine
}  // namespace hora
