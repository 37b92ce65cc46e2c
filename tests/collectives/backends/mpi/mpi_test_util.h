// Shared pieces of mpi_communicator_mp_test: a fixture that creates a fresh MpiCommunicator
// per test (collectively: every rank runs every test in the same order), element access by
// dtype, and the per-test deadline.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "collectives/backends/mpi/mpi_communicator.h"
#include "core/base/deadline.h"
#include "hora/data_type.h"

namespace hora {
namespace collectives {
namespace mpi_test {

// Long enough for an oversubscribed machine, short enough that a rank that skipped a step
// (after a failed ASSERT) makes its peers fail instead of hang.
inline Deadline test_deadline() { return Deadline::after(std::chrono::seconds(20)); }

// Reads/writes element i of a buffer of `dtype` as a double (float16/bfloat16 via kernels;
// bool as its raw byte).
double get_element(const void* data, size_t i, DataType dtype);
void set_element(void* data, size_t i, DataType dtype, double value);
// Tolerance for comparing a reduced value with its closed form: 0 for integers, a few ulps
// of the dtype relative to the value for floats.
double tolerance(DataType dtype, double expected);

class MpiTest : public ::testing::Test {
 protected:
  void SetUp() override { create({}); }
  // Replaces the communicator (collective over MPI_COMM_WORLD).
  void create(const MpiOptions& options);

  std::unique_ptr<MpiCommunicator> comm_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace mpi_test
}  // namespace collectives
}  // namespace hora
