// hora::start_timeline / stop_timeline at run time: rank 0 writes a Chrome trace (a JSON
// array that loads) of what was enqueued between the two calls and nothing after; with
// mark_cycles it holds global CYCLE_START marks; a second start replaces the file; the other
// ranks write nothing (and succeed). Every rank calls both, as scripts do.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "hora/hora.h"

namespace hora {
namespace {

TensorView view(std::vector<float>& v) {
  return TensorView::make(v.data(), DataType::kFloat32, {static_cast<int64_t>(v.size())}).value();
}

// The trace at `path` as JSON (a parse error fails the test).
nlohmann::json load(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json trace = nlohmann::json::parse(text.str(), nullptr, false);
  EXPECT_FALSE(trace.is_discarded()) << path << " is not JSON:\n" << text.str();
  return trace;
}

// The tensor names of the rows of `trace`, and how many events are named `phase`.
std::vector<std::string> rows(const nlohmann::json& trace) {
  std::vector<std::string> names;
  for (const auto& e : trace)
    if (e.value("ph", "") == "M") names.push_back(e["args"]["name"].get<std::string>());
  return names;
}
int count(const nlohmann::json& trace, const std::string& phase) {
  int n = 0;
  for (const auto& e : trace) n += e.value("name", "") == phase;
  return n;
}
bool has(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x == s) return true;
  return false;
}

// The same path on every rank (rank 0's process id, broadcast).
std::string shared_path(const std::string& stem) {
  std::vector<float> pid(1, static_cast<float>(::getpid()));
  EXPECT_TRUE(broadcast("timeline_control.pid." + stem, view(pid), 0).ok());
  return ::testing::TempDir() + "hora_tl_" + stem + "_" +
         std::to_string(static_cast<long>(pid[0])) + ".json";
}

TEST(TimelineControl, WritesWhatRanBetweenStartAndStop) {
  const std::string path = shared_path("between");
  std::vector<float> x(64, 1.f);
  ASSERT_TRUE(allreduce("tl.before", view(x), view(x), ReduceOp::kSum).ok());
  ASSERT_TRUE(start_timeline(path, /*mark_cycles=*/true).ok());
  ASSERT_TRUE(allreduce("tl.during", view(x), view(x), ReduceOp::kSum).ok());
  ASSERT_TRUE(stop_timeline().ok());
  ASSERT_TRUE(allreduce("tl.after", view(x), view(x), ReduceOp::kSum).ok());
  ASSERT_TRUE(stop_timeline().ok()) << "a second stop is a no-op";
  ASSERT_TRUE(barrier().ok());
  if (rank() != 0) return;  // rank 0 writes the timeline
  nlohmann::json trace = load(path);
  ASSERT_TRUE(trace.is_array());
  const std::vector<std::string> names = rows(trace);
  EXPECT_TRUE(has(names, "tl.during"));
  EXPECT_FALSE(has(names, "tl.before"));
  EXPECT_FALSE(has(names, "tl.after"));
  EXPECT_GT(count(trace, "ALLREDUCE"), 0);
  EXPECT_GT(count(trace, "CYCLE_START"), 0);
  for (const auto& e : trace) {
    if (e.value("name", "") == "CYCLE_START") {
      EXPECT_EQ(e["s"], "g");
    }
  }
  std::remove(path.c_str());
}

TEST(TimelineControl, ASecondStartReplacesTheFileWithoutCycleMarks) {
  const std::string first = shared_path("first"), second = shared_path("second");
  std::vector<float> x(8, 1.f);
  ASSERT_TRUE(start_timeline(first).ok());
  ASSERT_TRUE(allreduce("tl.first", view(x), view(x), ReduceOp::kSum).ok());
  ASSERT_TRUE(start_timeline(second).ok());
  ASSERT_TRUE(allreduce("tl.second", view(x), view(x), ReduceOp::kSum).ok());
  ASSERT_TRUE(stop_timeline().ok());
  ASSERT_TRUE(barrier().ok());
  if (rank() != 0) return;
  EXPECT_TRUE(has(rows(load(first)), "tl.first"));
  EXPECT_FALSE(has(rows(load(first)), "tl.second"));
  nlohmann::json trace = load(second);
  EXPECT_TRUE(has(rows(trace), "tl.second"));
  EXPECT_EQ(count(trace, "CYCLE_START"), 0);
  std::remove(first.c_str());
  std::remove(second.c_str());
}

// A tensor enqueued before start_timeline (its enqueue time not taken) and agreed after:
// its NEGOTIATE phase starts where the file does, not at the clock's epoch.
TEST(TimelineControl, APhaseBegunBeforeTheStartIsCutToTheFile) {
  const std::string path = shared_path("early");
  std::vector<float> x(8, 1.f);
  Handle early;
  if (rank() == 0) early = allreduce_async("tl.early", view(x), view(x), ReduceOp::kSum);
  ASSERT_TRUE(start_timeline(path).ok());
  ASSERT_TRUE(barrier().ok());  // rank 0's "tl.early" waits for the others meanwhile
  if (rank() != 0) early = allreduce_async("tl.early", view(x), view(x), ReduceOp::kSum);
  ASSERT_TRUE(early.wait().ok());
  ASSERT_TRUE(stop_timeline().ok());
  ASSERT_TRUE(barrier().ok());
  if (rank() != 0) return;
  for (const auto& e : load(path)) {
    if (e.value("ph", "") != "X") continue;
    EXPECT_GE(e["ts"].get<double>(), 0.0) << e.dump();
    EXPECT_GE(e["dur"].get<double>(), 0.0) << e.dump();
    EXPECT_LT(e["dur"].get<double>(), 60e6) << e.dump();
  }
  std::remove(path.c_str());
}

TEST(TimelineControl, RefusesAnEmptyPathAndAFileItCannotCreate) {
  EXPECT_EQ(start_timeline("").code(), StatusCode::kInvalidArgument);
  Status s = start_timeline("/nonexistent-dir/hora/tl.json");
  if (rank() == 0) {
    EXPECT_EQ(s.code(), StatusCode::kIo) << s.to_string();
  } else {
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
  EXPECT_TRUE(stop_timeline().ok());
}

TEST(TimelineControl, IsHomogeneousOnOneHost) {
  StatusOr<bool> h = is_homogeneous();
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  EXPECT_TRUE(*h);  // horarun -np N puts every rank on this host
}

}  // namespace
}  // namespace hora
