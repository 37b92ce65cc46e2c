// The MPI communicator's native collectives against closed-form expected values, for every
// rank count the CTest registrations use (1-4).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "tests/collectives/backends/mpi/mpi_test_util.h"

namespace hora {
namespace collectives {
namespace mpi_test {
namespace {

using ::testing::HasSubstr;

// Every dtype but bool, which has its own test (no sum or average).
const DataType kAllTypes[] = {DataType::kUint8,   DataType::kInt8,     DataType::kInt16,
                              DataType::kUint16,  DataType::kInt32,    DataType::kInt64,
                              DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                              DataType::kFloat64};
const ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                            ReduceOp::kProduct};

// Rank r's element i: r + c(i), with c small so every result is exact in every dtype
// (products use c in {1, 2}: at most 2*3*4*5 = 120).
double contribution(int rank, size_t i, ReduceOp op) {
  const double c = op == ReduceOp::kProduct ? 1 + i % 2 : 1 + i % 7;
  return rank + c;
}

double expected_reduction(int size, size_t i, ReduceOp op, DataType dtype) {
  double sum = 0, product = 1;
  for (int r = 0; r < size; ++r) {
    sum += contribution(r, i, op);
    product *= contribution(r, i, op);
  }
  switch (op) {
    case ReduceOp::kSum: return sum;
    case ReduceOp::kAverage:
      // Integers: computed in double and rounded half away from zero (kernels::scale).
      return is_floating(dtype) ? sum / size
                                : static_cast<double>(std::llround(sum * (1.0 / size)));
    case ReduceOp::kMin: return contribution(0, i, op);
    case ReduceOp::kMax: return contribution(size - 1, i, op);
    case ReduceOp::kProduct: return product;
    case ReduceOp::kAdasum: break;  // not elementwise: not in this test
  }
  return 0;
}

void fill(std::vector<char>* buf, size_t count, DataType dtype, int rank, ReduceOp op) {
  buf->assign(count * data_type_bytes(dtype), 0);
  for (size_t i = 0; i < count; ++i) set_element(buf->data(), i, dtype, contribution(rank, i, op));
}

using MpiCollectivesTest = MpiTest;

TEST_F(MpiCollectivesTest, AllreduceEveryDtypeAndOpInAndOutOfPlace) {
  const size_t count = 1000;
  for (DataType dtype : kAllTypes) {
    for (ReduceOp op : kAllOps) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(std::string(data_type_name(dtype)) + " " + reduce_op_name(op) +
                     (in_place ? " in place" : ""));
        std::vector<char> in, out(count * data_type_bytes(dtype), 0);
        fill(&in, count, dtype, rank_, op);
        void* dst = in_place ? in.data() : out.data();
        Status status = comm_->allreduce(in.data(), dst, count, dtype, op, test_deadline());
        ASSERT_TRUE(status.ok()) << status.to_string();
        for (size_t i = 0; i < count; ++i) {
          const double want = expected_reduction(size_, i, op, dtype);
          ASSERT_NEAR(get_element(dst, i, dtype), want, tolerance(dtype, want)) << "element " << i;
        }
      }
    }
  }
}

TEST_F(MpiCollectivesTest, FloatMinMaxPropagateNaNLikeTheKernels) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16}) {
    for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
      std::vector<char> buf;
      fill(&buf, 4, dtype, rank_, op);
      // The NaN sits on the last rank, where MPI's own `a < b ? a : b` would drop it.
      if (rank_ == size_ - 1) set_element(buf.data(), 1, dtype, std::nan(""));
      ASSERT_TRUE(comm_->allreduce(buf.data(), buf.data(), 4, dtype, op, test_deadline()).ok());
      EXPECT_TRUE(std::isnan(get_element(buf.data(), 1, dtype)))
          << data_type_name(dtype) << " " << reduce_op_name(op);
      EXPECT_FALSE(std::isnan(get_element(buf.data(), 0, dtype)));
    }
  }
}

// 8-bit sums wrap modulo 2^8, as in hora's kernels, where Open MPI 4.1's AVX op would
// saturate (open-mpi/ompi#8045). 1009 elements, so the vectorised path runs.
TEST_F(MpiCollectivesTest, EightBitSumsWrapInsteadOfSaturating) {
  const size_t count = 1009;
  std::vector<uint8_t> u(count), u_out(count, 0);
  std::vector<int8_t> s(count), s_out(count, 0);
  for (size_t i = 0; i < count; ++i) {
    u[i] = static_cast<uint8_t>(200 + i % 50);
    s[i] = static_cast<int8_t>(100 + i % 20);
  }
  ASSERT_TRUE(comm_
                  ->allreduce(u.data(), u_out.data(), count, DataType::kUint8, ReduceOp::kSum,
                              test_deadline())
                  .ok());
  ASSERT_TRUE(comm_
                  ->allreduce(s.data(), s_out.data(), count, DataType::kInt8, ReduceOp::kSum,
                              test_deadline())
                  .ok());
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(u_out[i], static_cast<uint8_t>(size_ * (200 + i % 50))) << "uint8 element " << i;
    ASSERT_EQ(s_out[i], static_cast<int8_t>(static_cast<uint8_t>(size_ * (100 + i % 20))))
        << "int8 element " << i;
  }
}

// 16-bit sums wrap modulo 2^16 too: open-mpi/ompi#8045's own case (16384 + 16384 on a short).
TEST_F(MpiCollectivesTest, SixteenBitSumsWrapInsteadOfSaturating) {
  const size_t count = 1009;
  std::vector<int16_t> s(count), s_out(count, 0);
  std::vector<uint16_t> u(count), u_out(count, 0);
  for (size_t i = 0; i < count; ++i) {
    s[i] = static_cast<int16_t>(16384 + i % 50);
    u[i] = static_cast<uint16_t>(60000 + i % 50);
  }
  ASSERT_TRUE(comm_
                  ->allreduce(s.data(), s_out.data(), count, DataType::kInt16, ReduceOp::kSum,
                              test_deadline())
                  .ok());
  ASSERT_TRUE(
      comm_
          ->allreduce(u.data(), u.data(), count, DataType::kUint16, ReduceOp::kSum, test_deadline())
          .ok());
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(s_out[i], static_cast<int16_t>(static_cast<uint16_t>(size_ * (16384 + i % 50))))
        << "int16 element " << i;
    ASSERT_EQ(u[i], static_cast<uint16_t>(size_ * (60000 + i % 50))) << "uint16 element " << i;
  }
}

// bool: min and product are logical and, max logical or, over any non-zero byte (2 and 0x80
// share no bit); results 0 or 1 on more than one rank. Sum and average are refused on every
// rank before MPI is called.
TEST_F(MpiCollectivesTest, BoolIsLogicalAndSumIsRefused) {
  const size_t count = 1009;
  const uint8_t kTrue[3] = {1, 2, 0x80};
  // Element i is false on rank r when bit r of i is clear (i < 2^size covers every pattern).
  auto byte_of = [&](int rank, size_t i) -> uint8_t {
    return ((i >> rank) & 1) ? kTrue[(rank + i) % 3] : 0;
  };
  for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
    std::vector<uint8_t> buf(count);
    for (size_t i = 0; i < count; ++i) buf[i] = byte_of(rank_, i);
    ASSERT_TRUE(
        comm_->allreduce(buf.data(), buf.data(), count, DataType::kBool, op, test_deadline()).ok());
    for (size_t i = 0; i < count; ++i) {
      bool all = true, any = false;
      for (int r = 0; r < size_; ++r) {
        all = all && byte_of(r, i) != 0;
        any = any || byte_of(r, i) != 0;
      }
      const uint8_t want = size_ == 1 ? byte_of(0, i) : (op == ReduceOp::kMax ? any : all);
      ASSERT_EQ(buf[i], want) << reduce_op_name(op) << " element " << i;
    }
  }
  std::vector<uint8_t> flags(4, 1), out(2 * size_, 0);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
    Status s =
        comm_->allreduce(flags.data(), flags.data(), 4, DataType::kBool, op, test_deadline());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    EXPECT_THAT(s.message(), HasSubstr("is not defined for bool; use min (logical and)"));
    std::vector<uint8_t> all(2 * size_, 1);
    s = comm_->reducescatter(all.data(), out.data(), std::vector<size_t>(size_, 2), DataType::kBool,
                             op, test_deadline());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  }
}

TEST_F(MpiCollectivesTest, AllreduceAndBroadcastAboveTheCountLimitAreChunked) {
  MpiOptions options;
  options.max_count_per_call = 100;
  create(options);
  const size_t count = 1050;  // 11 calls
  std::vector<char> buf;
  fill(&buf, count, DataType::kFloat32, rank_, ReduceOp::kSum);
  ASSERT_TRUE(comm_
                  ->allreduce(buf.data(), buf.data(), count, DataType::kFloat32, ReduceOp::kSum,
                              test_deadline())
                  .ok());
  for (size_t i = 0; i < count; ++i)
    ASSERT_EQ(get_element(buf.data(), i, DataType::kFloat32),
              expected_reduction(size_, i, ReduceOp::kSum, DataType::kFloat32));
  std::vector<int32_t> data(count, rank_ == size_ - 1 ? 0 : -1);
  if (rank_ == size_ - 1) std::iota(data.begin(), data.end(), 5);
  ASSERT_TRUE(
      comm_->broadcast(data.data(), count, DataType::kInt32, size_ - 1, test_deadline()).ok());
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(data[i], static_cast<int32_t>(5 + i));
  // The v-collectives cannot be split: a total above the limit is a clear error.
  std::vector<size_t> counts(size_, 0);
  counts[0] = 101;
  std::vector<float> in(101), out(101);
  Status too_big =
      comm_->allgatherv(in.data(), out.data(), counts, DataType::kFloat32, test_deadline());
  EXPECT_EQ(too_big.code(), StatusCode::kUnimplemented) << too_big.to_string();
  EXPECT_THAT(too_big.message(), HasSubstr("more than 100 elements"));
}

// counts[p] for the allgatherv tests: uneven, with zeros.
std::vector<size_t> uneven_counts(int size) {
  std::vector<size_t> counts(size);
  for (int p = 0; p < size; ++p) counts[p] = p % 2 == 1 ? 0 : 3 + 2 * p;
  if (size > 1) counts[size - 1] += 1;
  return counts;
}

TEST_F(MpiCollectivesTest, AllgathervUnevenCountsWithZeros) {
  const auto counts = uneven_counts(size_);
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  std::vector<size_t> displs(size_, 0);
  for (int p = 1; p < size_; ++p) displs[p] = displs[p - 1] + counts[p - 1];
  for (DataType dtype : {DataType::kInt32, DataType::kFloat16, DataType::kBFloat16,
                         DataType::kFloat64, DataType::kUint8}) {
    // 0: separate buffers; 1: hora in place (in == out); 2: MPI in place (in at own slot).
    for (int layout = 0; layout < 3; ++layout) {
      SCOPED_TRACE(std::string(data_type_name(dtype)) + " layout " + std::to_string(layout));
      const size_t esize = data_type_bytes(dtype);
      std::vector<char> in(counts[rank_] * esize + 1), out(total * esize + 1, 0);
      for (size_t j = 0; j < counts[rank_]; ++j) set_element(in.data(), j, dtype, rank_ * 10 + j);
      const void* src = in.data();
      if (layout == 1) {
        std::copy(in.begin(), in.begin() + counts[rank_] * esize, out.begin());
        src = out.data();
      } else if (layout == 2) {
        std::copy(in.begin(), in.begin() + counts[rank_] * esize,
                  out.begin() + displs[rank_] * esize);
        src = out.data() + displs[rank_] * esize;
      }
      Status status = comm_->allgatherv(src, out.data(), counts, dtype, test_deadline());
      ASSERT_TRUE(status.ok()) << status.to_string();
      for (int p = 0; p < size_; ++p)
        for (size_t j = 0; j < counts[p]; ++j)
          ASSERT_EQ(get_element(out.data(), displs[p] + j, dtype), p * 10.0 + j)
              << "rank " << p << " element " << j;
    }
  }
}

TEST_F(MpiCollectivesTest, BroadcastFromEveryRoot) {
  for (DataType dtype : {DataType::kInt64, DataType::kBFloat16, DataType::kFloat32}) {
    for (int root = 0; root < size_; ++root) {
      std::vector<char> buf(257 * data_type_bytes(dtype), 0);
      for (size_t i = 0; i < 257; ++i)
        set_element(buf.data(), i, dtype,
                    rank_ == root ? root + static_cast<double>(i % 50) : -1.0);
      ASSERT_TRUE(comm_->broadcast(buf.data(), 257, dtype, root, test_deadline()).ok());
      for (size_t i = 0; i < 257; ++i)
        ASSERT_EQ(get_element(buf.data(), i, dtype), root + static_cast<double>(i % 50))
            << data_type_name(dtype) << " root " << root;
    }
  }
  Status bad_root = comm_->broadcast(nullptr, 0, DataType::kInt32, size_, test_deadline());
  EXPECT_EQ(bad_root.code(), StatusCode::kInvalidArgument);
}

TEST_F(MpiCollectivesTest, AlltoallvUnevenWithZeros) {
  // Rank s sends (s + d) % 3 elements to rank d; element j carries s*16 + d*4 + j.
  auto n = [](int s, int d) { return static_cast<size_t>((s + d) % 3); };
  for (DataType dtype : {DataType::kInt32, DataType::kBFloat16, DataType::kFloat64}) {
    for (bool in_place : {false, true}) {
      const size_t esize = data_type_bytes(dtype);
      std::vector<size_t> send_counts(size_), recv_counts(size_);
      size_t send_total = 0, recv_total = 0;
      for (int p = 0; p < size_; ++p) {
        send_counts[p] = n(rank_, p);
        recv_counts[p] = n(p, rank_);
        send_total += send_counts[p];
        recv_total += recv_counts[p];
      }
      std::vector<char> in(std::max(send_total, recv_total) * esize + 1);
      std::vector<char> out(recv_total * esize + 1, 0);
      size_t k = 0;
      for (int d = 0; d < size_; ++d)
        for (size_t j = 0; j < send_counts[d]; ++j)
          set_element(in.data(), k++, dtype, rank_ * 16 + d * 4 + j);
      void* dst = in_place ? in.data() : out.data();
      Status status =
          comm_->alltoallv(in.data(), send_counts, dst, recv_counts, dtype, test_deadline());
      ASSERT_TRUE(status.ok()) << status.to_string();
      k = 0;
      for (int s = 0; s < size_; ++s)
        for (size_t j = 0; j < recv_counts[s]; ++j)
          ASSERT_EQ(get_element(dst, k++, dtype), s * 16.0 + rank_ * 4 + j)
              << data_type_name(dtype) << " from rank " << s;
    }
  }
}

TEST_F(MpiCollectivesTest, ReducescatterUnevenBlocks) {
  std::vector<size_t> recv_counts(size_);
  for (int p = 0; p < size_; ++p) recv_counts[p] = p == 1 ? 0 : p + 2;
  const size_t total = std::accumulate(recv_counts.begin(), recv_counts.end(), size_t{0});
  size_t mine = 0;
  for (int p = 0; p < rank_; ++p) mine += recv_counts[p];
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kInt64}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kAverage}) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(std::string(data_type_name(dtype)) + " " + reduce_op_name(op));
        std::vector<char> in, out(recv_counts[rank_] * data_type_bytes(dtype) + 1, 0);
        fill(&in, total, dtype, rank_, op);
        void* dst = in_place ? in.data() : out.data();
        Status status =
            comm_->reducescatter(in.data(), dst, recv_counts, dtype, op, test_deadline());
        ASSERT_TRUE(status.ok()) << status.to_string();
        for (size_t j = 0; j < recv_counts[rank_]; ++j) {
          const double want = expected_reduction(size_, mine + j, op, dtype);
          ASSERT_NEAR(get_element(dst, j, dtype), want, tolerance(dtype, want)) << j;
        }
      }
    }
  }
}

TEST_F(MpiCollectivesTest, BarrierDeadlineBreaksTheCommunicator) {
  ASSERT_TRUE(comm_->barrier(test_deadline()).ok());
  if (size_ == 1) return;  // a barrier of one rank cannot wait for anyone
  if (rank_ == 0) {
    // The others join only after the WORLD barrier below, so this barrier times out.
    Status late = comm_->barrier(Deadline::after(std::chrono::milliseconds(200)));
    EXPECT_EQ(late.code(), StatusCode::kTimeout) << late.to_string();
    EXPECT_THAT(late.message(), HasSubstr("MPI_Ibarrier"));
    Status after = comm_->barrier(test_deadline());
    EXPECT_EQ(after.code(), StatusCode::kTimeout);
    EXPECT_THAT(after.message(), HasSubstr("broken by an earlier failure"));
  }
  ASSERT_EQ(MPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);
  if (rank_ != 0) {
    // Matches rank 0's still-pending MPI_Ibarrier, so no request stays incomplete.
    ASSERT_TRUE(comm_->barrier(test_deadline()).ok());
  }
}

}  // namespace
}  // namespace mpi_test
}  // namespace collectives
}  // namespace hora
