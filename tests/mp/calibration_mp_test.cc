// The allreduce calibration at init (collectives/calibration.h) in a real job: with more than
// one rank the job's topology carries a calibration measured on the job's communicator, every
// rank holds the same figures and picks the same algorithm at every size (a disagreement would
// deadlock the job), the engine's allreduces still give the closed-form result, and
// HORA_CALIBRATE_MS=0 (the second registration) leaves the table in charge.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "collectives/calibration.h"
#include "collectives/selector.h"
#include "core/context.h"
#include "core/context_access.h"
#include "hora/hora.h"
#include "tests/mp/mp_env.h"

namespace hora {
namespace {

using collectives::Algorithm;

bool calibration_off() {
  const char* v = std::getenv("HORA_CALIBRATE_MS");
  return v != nullptr && std::strtod(v, nullptr) == 0;
}

TEST(CalibrationMp, EveryRankHoldsTheSameFiguresAndChoices) {
  const collectives::Topology& topology = detail::context()->topology();
  collectives::Communicator& comm = mp::mp_communicator();
  const std::string model = comm.cost_model();
  if (comm.size() == 1 || calibration_off()) {
    EXPECT_EQ(topology.calibration, nullptr) << "size " << comm.size();
    return;
  }
  ASSERT_NE(topology.calibration, nullptr);
  const collectives::AllreduceCalibration& cal = *topology.calibration;
  EXPECT_TRUE(cal.applies_to(model)) << cal.cost_model << " vs " << model;
  EXPECT_GE(cal.sizes.size(), 2u);
  // Every figure and every choice, as doubles; their min and max across ranks must be equal.
  std::vector<double> mine;
  for (const auto& row : cal.us) mine.insert(mine.end(), row.begin(), row.end());
  for (size_t bytes = 4; bytes <= (size_t{64} << 20); bytes *= 2) {
    mine.push_back(static_cast<double>(static_cast<int>(
        collectives::select_allreduce(bytes, comm.size(), model, Algorithm::kAuto, &topology)
            .algorithm)));
  }
  std::vector<double> low(mine.size()), high(mine.size());
  collectives::AlgorithmOptions o;
  o.deadline = mp::mp_deadline();
  ASSERT_TRUE(collectives::ring_allreduce(comm, mine.data(), low.data(), mine.size(),
                                          DataType::kFloat64, ReduceOp::kMin, o)
                  .ok());
  ASSERT_TRUE(collectives::ring_allreduce(comm, mine.data(), high.data(), mine.size(),
                                          DataType::kFloat64, ReduceOp::kMax, o)
                  .ok());
  EXPECT_EQ(0, std::memcmp(low.data(), high.data(), low.size() * sizeof(double)))
      << "ranks disagree on the calibration or on a choice";
  // auto through the selector at every size gives the closed form.
  for (size_t count : {size_t{1}, size_t{1000}, size_t{5000}, size_t{300000}}) {
    std::vector<float> in(count, static_cast<float>(comm.rank() + 1)), out(count);
    ASSERT_TRUE(collectives::run_allreduce(Algorithm::kAuto, comm, in.data(), out.data(), count,
                                           DataType::kFloat32, ReduceOp::kSum,
                                           [&] {
                                             collectives::AlgorithmOptions a = o;
                                             a.topology = &topology;
                                             return a;
                                           }())
                    .ok());
    const float expect = comm.size() * (comm.size() + 1) / 2.0f;
    EXPECT_EQ(out.front(), expect);
    EXPECT_EQ(out.back(), expect);
  }
}

}  // namespace
}  // namespace hora
