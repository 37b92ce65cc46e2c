#include "core/config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>

#include "core/engine/autotune_log.h"

namespace hora {
namespace {

StatusOr<Config> parse(const std::map<std::string, std::string>& env) {
  return Config::from_lookup([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(ConfigTest, Defaults) {
  Config c = parse({}).value();
  EXPECT_EQ(c.backend, BackendKind::kAuto);
  EXPECT_TRUE(c.shm_enabled);
  EXPECT_EQ(c.fusion_threshold_bytes, int64_t{64} << 20);
  EXPECT_DOUBLE_EQ(c.cycle_time_ms, 1.0);
  EXPECT_DOUBLE_EQ(c.heartbeat_ms, 100.0);
  EXPECT_EQ(c.cache_capacity, 1024);
  EXPECT_EQ(c.allreduce_algo, AllreduceAlgo::kAuto);
  EXPECT_TRUE(c.timeline_path.empty());
  EXPECT_DOUBLE_EQ(c.stall_warning_s, 60.0);
  EXPECT_DOUBLE_EQ(c.stall_shutdown_s, 0.0);
  EXPECT_DOUBLE_EQ(c.timeout_s, 300.0);
  EXPECT_DOUBLE_EQ(c.start_timeout_s, 30.0);
  EXPECT_EQ(c.cpu_isa, CpuIsa::kBest);
  EXPECT_EQ(c.log_level, LogLevel::kWarning);
  EXPECT_DOUBLE_EQ(c.calibrate_ms, 100.0);
}

TEST(ConfigTest, EveryVariableParses) {
  Config c = parse({{"HORA_BACKEND", "gloo"},
                    {"HORA_SHM", "no"},
                    {"HORA_FUSION_THRESHOLD", "16M"},
                    {"HORA_CYCLE_TIME_MS", "2.5"},
                    {"HORA_HEARTBEAT_MS", "50"},
                    {"HORA_CACHE_CAPACITY", "0"},
                    {"HORA_ALLREDUCE_ALGO", "rd"},
                    {"HORA_CALIBRATE_MS", "0"},
                    {"HORA_AUTOTUNE", "0"},
                    {"HORA_AUTOTUNE_SAMPLES", "7"},
                    {"HORA_TIMELINE", "/tmp/t.json"},
                    {"HORA_STALL_WARNING_S", "5"},
                    {"HORA_STALL_SHUTDOWN_S", "10"},
                    {"HORA_TIMEOUT_S", "0.5"},
                    {"HORA_START_TIMEOUT_S", "2"},
                    {"HORA_GLOO_IFACE", "lo"},
                    {"HORA_CPU_ISA", "scalar"},
                    {"HORA_LOG_LEVEL", "debug"}})
                 .value();
  EXPECT_EQ(c.backend, BackendKind::kGloo);
  EXPECT_FALSE(c.shm_enabled);
  EXPECT_EQ(c.fusion_threshold_bytes, int64_t{16} << 20);
  EXPECT_DOUBLE_EQ(c.cycle_time_ms, 2.5);
  EXPECT_DOUBLE_EQ(c.heartbeat_ms, 50);
  EXPECT_EQ(c.cache_capacity, 0);
  EXPECT_EQ(c.allreduce_algo, AllreduceAlgo::kRecursiveDoubling);
  EXPECT_DOUBLE_EQ(c.calibrate_ms, 0);
  EXPECT_FALSE(c.autotune);
  EXPECT_EQ(c.autotune_samples, 7);
  EXPECT_EQ(c.timeline_path, "/tmp/t.json");
  EXPECT_DOUBLE_EQ(c.stall_warning_s, 5);
  EXPECT_DOUBLE_EQ(c.stall_shutdown_s, 10);
  EXPECT_DOUBLE_EQ(c.timeout_s, 0.5);
  EXPECT_DOUBLE_EQ(c.start_timeout_s, 2);
  EXPECT_EQ(c.gloo_iface, "lo");
  EXPECT_EQ(c.cpu_isa, CpuIsa::kScalar);
  EXPECT_EQ(c.log_level, LogLevel::kDebug);
}

struct BadCase {
  const char* var;
  const char* value;
};

class ConfigBadValueTest : public testing::TestWithParam<BadCase> {};

TEST_P(ConfigBadValueTest, NamesVariableAndValue) {
  const BadCase& bad = GetParam();
  auto r = parse({{bad.var, bad.value}});
  ASSERT_FALSE(r.ok()) << bad.var << "=" << bad.value;
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  const std::string msg = r.status().message();
  EXPECT_NE(msg.find(bad.var), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::string("'") + bad.value + "'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected"), std::string::npos) << msg;
}

// An idle rank answers one round per heartbeat; a round waits at most HORA_TIMEOUT_S.
TEST(ConfigTest, HeartbeatMustBeWellBelowTheTimeout) {
  auto c = parse({{"HORA_HEARTBEAT_MS", "600000"}});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(
      c.status().message().find("HORA_HEARTBEAT_MS=600000 is too long for HORA_TIMEOUT_S=300"),
      std::string::npos)
      << c.status().to_string();
  EXPECT_TRUE(parse({{"HORA_HEARTBEAT_MS", "5000"}, {"HORA_TIMEOUT_S", "10"}}).ok());
}

INSTANTIATE_TEST_SUITE_P(
    All, ConfigBadValueTest,
    testing::Values(BadCase{"HORA_FUSION_THRESHOLD", "abc"}, BadCase{"HORA_FUSION_THRESHOLD", "-5"},
                    BadCase{"HORA_LOG_LEVEL", "loud"}, BadCase{"HORA_TIMEOUT_S", "0"},
                    BadCase{"HORA_START_TIMEOUT_S", "0"}, BadCase{"HORA_TIMEOUT_S", "-1"},
                    BadCase{"HORA_BACKEND", "tcp"}, BadCase{"HORA_SHM", "2"},
                    BadCase{"HORA_ALLREDUCE_ALGO", "butterfly"}, BadCase{"HORA_CPU_ISA", "neon"},
                    BadCase{"HORA_CACHE_CAPACITY", "-1"}, BadCase{"HORA_CYCLE_TIME_MS", "fast"},
                    BadCase{"HORA_HEARTBEAT_MS", "0"}, BadCase{"HORA_STALL_WARNING_S", "x"},
                    BadCase{"HORA_STALL_SHUTDOWN_S", "-3"}, BadCase{"HORA_CALIBRATE_MS", "-1"},
                    BadCase{"HORA_CALIBRATE_MS", "soon"}, BadCase{"HORA_AUTOTUNE", "maybe"},
                    BadCase{"HORA_AUTOTUNE_SAMPLES", "0"}, BadCase{"HORA_AUTOTUNE_SAMPLES", "x"}),
    [](const testing::TestParamInfo<BadCase>& info) {
      return std::string(info.param.var).substr(5) + "_" + std::to_string(info.index);
    });

TEST(AutotuneConfig, OnlyAnExplicitOneSearchesAndUserSetValuesAreMarked) {
  Config d = parse({}).value();
  EXPECT_TRUE(d.autotune);  // the algorithm per size class, as before
  EXPECT_FALSE(d.autotune_params);
  EXPECT_FALSE(d.fusion_threshold_set || d.cycle_time_set || d.cache_set);
  Config on = parse({{"HORA_AUTOTUNE", "1"}, {"HORA_CYCLE_TIME_MS", "2"}}).value();
  EXPECT_TRUE(on.autotune_params);
  EXPECT_TRUE(on.cycle_time_set);
  EXPECT_FALSE(on.fusion_threshold_set);
  const engine::EngineOptions eo = engine_options_from(on);
  EXPECT_TRUE(eo.autotune_params);
  EXPECT_TRUE(eo.cycle_time_set);
  EXPECT_FALSE(parse({{"HORA_AUTOTUNE", "0"}}).value().autotune_params);
}

TEST(AutotuneConfig, FromPinsTheBestRowUnderValuesTheUserSet) {
  const std::string path = ::testing::TempDir() + "autotune_from_test.csv";
  {
    engine::AutotuneLogWriter w;
    ASSERT_TRUE(w.open(path).ok());
    engine::AutotuneRow r;
    r.values.fusion_threshold_bytes = 1 << 20;
    r.values.cycle_time_ms = 0.5;
    r.values.cache_enabled = true;
    w.write(r);
    r.values.fusion_threshold_bytes = 4 << 20;
    r.values.cache_enabled = false;
    r.sample = -1;
    w.write(r);
  }
  Config c = parse({{"HORA_AUTOTUNE_FROM", path}, {"HORA_CYCLE_TIME_MS", "3"}}).value();
  EXPECT_EQ(c.fusion_threshold_bytes, 4 << 20);
  EXPECT_DOUBLE_EQ(c.cycle_time_ms, 3.0);  // the user's
  EXPECT_EQ(c.cache_capacity, 0);          // the best row had the cache off
  EXPECT_TRUE(c.fusion_threshold_set && c.cycle_time_set && c.cache_set);
  std::remove(path.c_str());
  StatusOr<Config> missing = parse({{"HORA_AUTOTUNE_FROM", path}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("HORA_AUTOTUNE_FROM"), std::string::npos);
}

TEST(AutotuneConfig, FreeKnobsStartFromTheValueSet) {
  Config c = parse({{"HORA_AUTOTUNE", "1"},
                    {"HORA_FUSION_THRESHOLD", "65536"},
                    {"HORA_CACHE_CAPACITY", "0"},
                    {"HORA_AUTOTUNE_FREE", "fusion_threshold,cache"}})
                 .value();
  EXPECT_EQ(c.fusion_threshold_bytes, 65536);
  EXPECT_FALSE(c.fusion_threshold_set);
  EXPECT_FALSE(c.cache_set);
  StatusOr<Config> bad = parse({{"HORA_AUTOTUNE_FREE", "fusion,cache"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'fusion' is not a knob"), std::string::npos)
      << bad.status().to_string();
}

}  // namespace
}  // namespace hora
