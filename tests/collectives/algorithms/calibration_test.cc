// The allreduce calibration (collectives/calibration.h) on in-process ranks: every rank ends
// with bitwise identical figures and the same choice at every size even when each rank's own
// measurements point at a different algorithm; the budget cut; the interpolation; and the
// selector taking the calibration only for the cost model it was measured on.
#include "collectives/calibration.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "collectives/topology.h"
#include "tests/support/multi_rank.h"

namespace hora {
namespace collectives {
namespace {

using test_support::run_ranks;

// Sizes that straddle every probe and go past the largest.
const size_t kQuerySizes[] = {0,        4,        8,         100,       1024,    5000,
                              16 << 10, 77 << 10, 128 << 10, 300 << 10, 1 << 20, 3 << 20,
                              4 << 20,  9 << 20,  64 << 20,  1u << 30};

CalibrationOptions small_options() {
  CalibrationOptions o;
  o.sizes = {8, 1024, 16 << 10, 64 << 10};  // small: the test runs in milliseconds
  o.repeats_small = 2;
  // Every size is measured, however slow the build (under ASan, 4 in-process ranks on 2 cores
  // spent 0.7 s on 1 KiB, and 16x that projected for 16 KiB passed a budget of 10 s).
  o.budget = std::chrono::hours(1);
  return o;
}

TEST(CalibrationTest, RanksThatMeasureDifferentlyStillChooseAlike) {
  for (int n = 1; n <= 4; ++n) {
    std::mutex mu;
    std::vector<AllreduceCalibration> cals(static_cast<size_t>(n));
    std::vector<std::vector<Algorithm>> choices(static_cast<size_t>(n));
    Status status = run_ranks(n, [&](Communicator& comm) -> Status {
      const int rank = comm.rank();
      CalibrationOptions o = small_options();
      // Rank r measures algorithm number (r + size index) % 4 as by far the fastest, and the
      // others slower the higher its rank: no two ranks agree on any size's winner.
      o.skew = [rank](Algorithm a, size_t bytes, double) {
        const int favourite = (rank + static_cast<int>(bytes % 7)) % 4;
        return static_cast<int>(a) - 1 == favourite ? 1.0 : 100.0 + rank * static_cast<int>(a);
      };
      Topology topology = Topology::single_host(rank, comm.size());
      HORA_ASSIGN_OR_RETURN(AllreduceCalibration cal,
                            calibrate_allreduce(comm, &topology, o, Deadline::after_seconds(30)));
      topology.calibration = std::make_shared<const AllreduceCalibration>(cal);
      std::vector<Algorithm> mine;
      for (size_t bytes : kQuerySizes)
        mine.push_back(
            select_allreduce(bytes, comm.size(), comm.cost_model(), Algorithm::kAuto, &topology)
                .algorithm);
      std::lock_guard<std::mutex> lock(mu);
      cals[static_cast<size_t>(rank)] = cal;
      choices[static_cast<size_t>(rank)] = mine;
      return Status::OK();
    });
    ASSERT_TRUE(status.ok()) << "n=" << n << ": " << status.to_string();
    if (n == 1) {
      EXPECT_TRUE(cals[0].sizes.empty()) << "one rank: nothing to calibrate";
      continue;
    }
    ASSERT_EQ(cals[0].sizes, small_options().sizes) << "n=" << n;
    for (int r = 1; r < n; ++r) {
      EXPECT_EQ(cals[r].algorithms, cals[0].algorithms) << "n=" << n << " rank " << r;
      ASSERT_EQ(cals[r].us.size(), cals[0].us.size());
      for (size_t a = 0; a < cals[0].us.size(); ++a) {
        ASSERT_EQ(cals[r].us[a].size(), cals[0].us[a].size());
        EXPECT_EQ(0, std::memcmp(cals[r].us[a].data(), cals[0].us[a].data(),
                                 cals[0].us[a].size() * sizeof(double)))
            << "n=" << n << " rank " << r << ": figures differ bitwise";
      }
      EXPECT_EQ(choices[r], choices[0]) << "n=" << n << " rank " << r;
    }
    // Agreement is the max: every candidate's figure is at least the slowest rank's 100.
    for (const auto& row : cals[0].us)
      for (double us : row) EXPECT_GE(us, 100.0) << "n=" << n;
  }
}

TEST(CalibrationTest, MeasuresRealTimesAndStopsAtTheBudget) {
  Status status = run_ranks(3, [&](Communicator& comm) -> Status {
    CalibrationOptions o = small_options();
    o.budget = std::chrono::milliseconds(0);  // only the two sizes always measured
    HORA_ASSIGN_OR_RETURN(AllreduceCalibration cal,
                          calibrate_allreduce(comm, nullptr, o, Deadline::after_seconds(30)));
    EXPECT_EQ(cal.sizes, (std::vector<size_t>{8, 1024}));
    EXPECT_EQ(cal.cost_model, comm.cost_model());
    // The in-process backend has no native allreduce: hora's three.
    EXPECT_EQ(cal.algorithms, (std::vector<Algorithm>{Algorithm::kRing, Algorithm::kTree,
                                                      Algorithm::kRecursiveDoubling}));
    for (const auto& row : cal.us)
      for (double us : row) EXPECT_GT(us, 0.0);
    EXPECT_GT(cal.took_ms, 0.0);
    EXPECT_NE(cal.describe().find("1024 B:"), std::string::npos) << cal.describe();
    return Status::OK();
  });
  ASSERT_TRUE(status.ok()) << status.to_string();
}

// A communicator with a native allreduce over an in-process rank ("mpi": a cost model whose
// table offers native): hora's recursive doubling on the wrapped rank, after sleeping
// `sleep_ms(call)` for the `call`-th native allreduce of `slow_bytes` (counting from 0).
class SleepyNativeCommunicator final : public Communicator {
 public:
  SleepyNativeCommunicator(Communicator& inner, size_t slow_bytes, std::vector<int> sleep_ms)
      : inner_(inner), slow_bytes_(slow_bytes), sleep_ms_(std::move(sleep_ms)) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  const char* backend_name() const override { return "mpi"; }
  StatusOr<std::unique_ptr<Request>> isend(int peer, const void* data, size_t bytes,
                                           uint32_t tag) override {
    return inner_.isend(peer, data, bytes, tag);
  }
  StatusOr<std::unique_ptr<Request>> irecv(int peer, void* data, size_t bytes,
                                           uint32_t tag) override {
    return inner_.irecv(peer, data, bytes, tag);
  }
  Status allreduce(const void* in, void* out, size_t count, DataType dtype, ReduceOp op,
                   Deadline deadline) override {
    const size_t bytes = count * data_type_bytes(dtype);
    if (bytes == slow_bytes_) {
      const size_t call = calls_++;
      if (call < sleep_ms_.size() && sleep_ms_[call] > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms_[call]));
    }
    AlgorithmOptions o;
    o.deadline = deadline;
    o.tag = 0x6e617476;  // "natv"
    return recursive_doubling_allreduce(inner_, in, out, count, dtype, op, o);
  }
  void abort() override { inner_.abort(); }
  size_t calls() const { return calls_; }

 private:
  Communicator& inner_;
  const size_t slow_bytes_;
  const std::vector<int> sleep_ms_;
  size_t calls_ = 0;
};

// Ranks sharing cores make each call slow but live: a call timeout bounds each call (a peer
// that stops is named within it), not the calibration's hundreds of calls together.
TEST(CalibrationTest, ACallTimeoutBoundsEachCallNotTheWhole) {
  const auto limit = std::chrono::milliseconds(200);
  struct Case {
    const char* what;
    bool per_call;                    // limit as call_timeout, else as the whole deadline
    std::chrono::milliseconds pause;  // rank 1's, before each of its figures
    bool once;                        // only before its first figure
    StatusCode rank0;
  };
  // Rank 1 pausing 25 ms before each of its 12 figures (3 candidates x 4 sizes) keeps rank 0
  // at most 75 ms in any call, and 300 ms in all; a pause of a second is a peer that stopped.
  for (const Case& c :
       {Case{"slow, call timeout", true, std::chrono::milliseconds(25), false, StatusCode::kOk},
        Case{"slow, whole deadline", false, std::chrono::milliseconds(25), false,
             StatusCode::kTimeout},
        Case{"stopped, call timeout", true, std::chrono::milliseconds(1000), true,
             StatusCode::kTimeout}}) {
    StatusCode code0 = StatusCode::kOk;
    double took0 = 0;
    Status status = run_ranks(2, [&](Communicator& comm) -> Status {
      const int rank = comm.rank();
      CalibrationOptions o = small_options();
      auto paused = std::make_shared<bool>(false);
      o.skew = [rank, c, paused](Algorithm, size_t, double measured) {
        if (rank == 1 && !(c.once && *paused)) std::this_thread::sleep_for(c.pause);
        *paused = true;
        return measured;
      };
      Deadline deadline = Deadline::after_seconds(60);
      if (c.per_call) {
        o.call_timeout = limit;
      } else {
        deadline = Deadline::after(limit);
      }
      auto cal = calibrate_allreduce(comm, nullptr, o, deadline);
      if (rank == 0) {
        code0 = cal.status().code();
        if (cal.ok()) took0 = cal.value().took_ms;
      }
      return Status::OK();
    });
    ASSERT_TRUE(status.ok()) << c.what << ": " << status.to_string();
    EXPECT_EQ(code0, c.rank0) << c.what;
    if (c.rank0 == StatusCode::kOk) {
      EXPECT_GT(took0, static_cast<double>(limit.count())) << c.what;
    }
  }
}

TEST(CalibrationTest, EachRoundTimesAWarmBurstAndTheMedianRoundCounts) {
  // At 1 KiB (up to 128 KiB: CalibrationOptions::repeats_small rounds; up to 512 KiB a
  // burst of 3): call 0 is the size's warm-up; then each round is one untimed call and three
  // timed ones. Round 0's burst sleeps 60 ms a call, round 1's nothing, round 2's 10 ms, and
  // every untimed call 50 ms: the figure is round 2's, about 10 ms per call (the fastest
  // round would read about 0, the mean of the rounds 23, and timing the untimed call with
  // the burst 20 or more).
  const std::vector<int> sleeps = {50, 50, 60, 60, 60, 50, 0, 0, 0, 50, 10, 10, 10};
  Status status = run_ranks(2, [&](Communicator& inner) -> Status {
    SleepyNativeCommunicator comm(inner, 1024, sleeps);
    CalibrationOptions o;
    o.sizes = {8, 1024};
    o.repeats_small = 3;
    o.warmup_bytes = 0;  // a warm-up of one call
    o.budget = std::chrono::milliseconds(10000);
    HORA_ASSIGN_OR_RETURN(AllreduceCalibration cal,
                          calibrate_allreduce(comm, nullptr, o, Deadline::after_seconds(60)));
    EXPECT_EQ(comm.calls(), sleeps.size()) << "1 warm-up + 3 rounds x (1 untimed + 3 timed)";
    const auto native = std::find(cal.algorithms.begin(), cal.algorithms.end(), Algorithm::kNative);
    if (native == cal.algorithms.end()) return Status::internal("native is not a candidate");
    const double us = cal.us[static_cast<size_t>(native - cal.algorithms.begin())][1];
    EXPECT_GE(us, 9900.0) << cal.describe();
    EXPECT_LT(us, 20000.0) << cal.describe();
    return Status::OK();
  });
  ASSERT_TRUE(status.ok()) << status.to_string();
}

TEST(CalibrationTest, TheWarmUpStreamsWarmupBytesFromOneKibOn) {
  // warmup_bytes 5000: at 1 KiB four warm-up calls (5000 / 1024), at 2 KiB two, at 8 B one
  // (below 1 KiB); at 16 KiB one (at least one), and never more than 512 (1 B of warm-up
  // over 1 KiB calls would be 2 MiB: 512). Each size then makes 2 rounds x (1 untimed + 3
  // timed) calls.
  struct Case {
    size_t bytes, warmup_bytes, warmup_calls;
  };
  for (const Case& c : {Case{1024, 5000, 4}, Case{2048, 5000, 2}, Case{8, 5000, 1},
                        Case{16 << 10, 5000, 1}, Case{1024, size_t{2} << 20, 512}}) {
    Status status = run_ranks(2, [&](Communicator& inner) -> Status {
      SleepyNativeCommunicator comm(inner, c.bytes, {});
      CalibrationOptions o;
      o.sizes = {c.bytes};
      o.repeats_small = 2;
      o.warmup_bytes = c.warmup_bytes;
      o.budget = std::chrono::milliseconds(10000);
      // The table's own choice measures fastest, so no probe is confirmed (more calls).
      const Algorithm table = table_allreduce_choice(c.bytes, 2, "mpi");
      o.skew = [table](Algorithm a, size_t, double) { return a == table ? 1.0 : 2.0; };
      HORA_ASSIGN_OR_RETURN(AllreduceCalibration cal,
                            calibrate_allreduce(comm, nullptr, o, Deadline::after_seconds(60)));
      EXPECT_TRUE(cal.confirmed.empty()) << cal.describe();
      EXPECT_EQ(comm.calls(), c.warmup_calls + 2 * 4)
          << c.bytes << " B, warmup_bytes " << c.warmup_bytes << ": " << cal.describe();
      return Status::OK();
    });
    ASSERT_TRUE(status.ok()) << status.to_string();
  }
}

TEST(CalibrationTest, AProbeThatOverturnsTheTableIsMeasuredAgain) {
  // At 1 KiB on "mpi" the table chooses rd. The skew stands for what the probes measured:
  // `first` on the first figure of each candidate, `again` on rd's figure after the confirming
  // rounds (the median over all its rounds). Every other candidate reads 10 us.
  struct Case {
    const char* what;
    double first, again;
    bool confirmed;
    double figure;
    bool table_kept;
  };
  for (const Case& c : {
           Case{"a slow moment: confirmed, and the table's choice stays", 30, 10, true, 10, true},
           Case{"slower again: confirmed, and the measured choice wins", 30, 30, true, 30, false},
           Case{"within the margin: not confirmed", 10.4, 99, false, 10.4, true},
       }) {
    ASSERT_EQ(table_allreduce_choice(1024, 2, "mpi"), Algorithm::kRecursiveDoubling);
    Status status = run_ranks(2, [&](Communicator& inner) -> Status {
      SleepyNativeCommunicator comm(inner, 0, {});  // backend "mpi"
      CalibrationOptions o;
      o.sizes = {1024};
      o.repeats_small = 2;
      o.budget = std::chrono::milliseconds(10000);
      int rd_figures = 0;
      o.skew = [&](Algorithm a, size_t, double) {
        if (a != Algorithm::kRecursiveDoubling) return 10.0;
        return rd_figures++ == 0 ? c.first : c.again;
      };
      HORA_ASSIGN_OR_RETURN(AllreduceCalibration cal,
                            calibrate_allreduce(comm, nullptr, o, Deadline::after_seconds(60)));
      EXPECT_EQ(rd_figures, c.confirmed ? 2 : 1) << c.what;
      EXPECT_EQ(cal.confirmed, c.confirmed ? std::vector<size_t>{1024} : std::vector<size_t>{})
          << c.what;
      EXPECT_EQ(cal.describe().find("(confirmed)") != std::string::npos, c.confirmed) << c.what;
      const size_t rd = static_cast<size_t>(
          std::find(cal.algorithms.begin(), cal.algorithms.end(), Algorithm::kRecursiveDoubling) -
          cal.algorithms.begin());
      EXPECT_DOUBLE_EQ(cal.us.at(rd).at(0), c.figure) << c.what;
      Topology topology = Topology::single_host(comm.rank(), 2);
      topology.calibration = std::make_shared<const AllreduceCalibration>(cal);
      EXPECT_EQ(select_allreduce(1024, 2, "mpi", Algorithm::kAuto, &topology).algorithm ==
                    Algorithm::kRecursiveDoubling,
                c.table_kept)
          << c.what << ": " << cal.describe();
      return Status::OK();
    });
    ASSERT_TRUE(status.ok()) << c.what << ": " << status.to_string();
  }
}

AllreduceCalibration handmade() {
  AllreduceCalibration cal;
  cal.cost_model = "builtin-shm";
  cal.sizes = {8, 1000, 2000};
  cal.algorithms = {Algorithm::kRing, Algorithm::kNative};
  cal.us = {{10, 20, 30}, {5, 25, 60}};
  return cal;
}

TEST(CalibrationTest, InterpolatesBetweenProbesAndExtendsPastTheLast) {
  const AllreduceCalibration cal = handmade();
  EXPECT_DOUBLE_EQ(cal.estimate_us(Algorithm::kRing, 0), 10);
  EXPECT_DOUBLE_EQ(cal.estimate_us(Algorithm::kRing, 8), 10);
  EXPECT_DOUBLE_EQ(cal.estimate_us(Algorithm::kRing, 1500), 25);
  EXPECT_DOUBLE_EQ(cal.estimate_us(Algorithm::kRing, 4000), 50);    // slope 0.01 us/B
  EXPECT_DOUBLE_EQ(cal.estimate_us(Algorithm::kNative, 3000), 95);  // slope 0.035 us/B
  EXPECT_LT(cal.estimate_us(Algorithm::kTree, 100), 0) << "not measured";
  AllreduceCalibration flat = cal;
  flat.us = {{10, 20, 15}, {5, 25, 60}};  // noise: the last probe faster than the one before
  EXPECT_DOUBLE_EQ(flat.estimate_us(Algorithm::kRing, 4000), 30);  // 15 us / 2000 B, proportional
}

TEST(CalibrationTest, SelectorUsesItOnlyForItsCostModel) {
  Topology t = Topology::single_host(0, 2);
  t.calibration = std::make_shared<const AllreduceCalibration>(handmade());
  EXPECT_EQ(select_allreduce(8, 2, "builtin-shm", Algorithm::kAuto, &t).algorithm,
            Algorithm::kNative);
  EXPECT_EQ(select_allreduce(1 << 20, 2, "builtin-shm", Algorithm::kAuto, &t).algorithm,
            Algorithm::kRing);
  // The override still wins.
  EXPECT_EQ(select_allreduce(1 << 20, 2, "builtin-shm", Algorithm::kTree, &t).algorithm,
            Algorithm::kTree);
  // Another cost model: the table (which offers tree and rd as well).
  EXPECT_EQ(explain_allreduce(8, 2, "builtin", &t).size(), 4u);
  EXPECT_EQ(explain_allreduce(8, 2, "builtin-shm", &t).size(), 2u);
  // Another rank count than the calibration's topology: the table.
  EXPECT_EQ(explain_allreduce(8, 3, "builtin-shm", &t).size(), 4u);
  // The table's choice (native on builtin-shm) stays unless it measured > 5% slower.
  AllreduceCalibration close = handmade();
  close.us = {{9.6, 20, 30}, {10, 25, 60}};  // ring 4% faster at 8 B, native 25% slower at 1000
  t.calibration = std::make_shared<const AllreduceCalibration>(close);
  EXPECT_EQ(select_allreduce(8, 2, "builtin-shm", Algorithm::kAuto, &t).algorithm,
            Algorithm::kNative);
  EXPECT_EQ(select_allreduce(1000, 2, "builtin-shm", Algorithm::kAuto, &t).algorithm,
            Algorithm::kRing);
  AllreduceCalibration past = handmade();
  past.us = {{9.4, 20, 30}, {10, 18, 60}};  // ring 6% faster at 8 B; native faster at 1000
  t.calibration = std::make_shared<const AllreduceCalibration>(past);
  EXPECT_EQ(select_allreduce(8, 2, "builtin-shm", Algorithm::kAuto, &t).algorithm,
            Algorithm::kRing);
  EXPECT_EQ(select_allreduce(1000, 2, "builtin-shm", Algorithm::kAuto, &t).algorithm,
            Algorithm::kNative);
}

TEST(CalibrationTest, AppliesToItsCostModelByNameAndThenByAddress) {
  AllreduceCalibration cal = handmade();  // measured on "builtin-shm"
  const char* literal = "builtin-shm";
  EXPECT_FALSE(cal.applies_to(static_cast<const char*>(nullptr)));
  EXPECT_FALSE(cal.applies_to("builtin"));
  EXPECT_TRUE(cal.applies_to(literal));  // by name; remembered by address
  EXPECT_TRUE(cal.applies_to(literal));
  EXPECT_FALSE(cal.applies_to(static_cast<const char*>(nullptr)));
  EXPECT_FALSE(cal.applies_to("builtin"));
  EXPECT_TRUE(cal.applies_to(std::string("builtin-shm")));
  EXPECT_FALSE(cal.applies_to(std::string("gloo")));
  // A copy remembers nothing, and a calibration without figures applies to nothing.
  AllreduceCalibration empty = cal;
  empty.sizes.clear();
  EXPECT_FALSE(empty.applies_to(literal));
  EXPECT_FALSE(empty.applies_to(std::string("builtin-shm")));
  const char* gloo = "gloo";
  AllreduceCalibration other = cal;
  other.cost_model = gloo;
  EXPECT_FALSE(other.applies_to(literal));
  EXPECT_TRUE(other.applies_to(gloo));  // remembered
  other = cal;                          // forgets it
  EXPECT_FALSE(other.applies_to(gloo));
  EXPECT_TRUE(other.applies_to(literal));
}

}  // namespace
}  // namespace collectives
}  // namespace hora
