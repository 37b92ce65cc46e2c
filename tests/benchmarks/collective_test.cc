// busbw factors and count/size rules, as nccl-tests defines them; and the closed-form check.
#include "benchmarks/hora_bench/collective.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "benchmarks/hora_bench/check.h"
#include "kernels/kernels.h"

namespace hora {
namespace bench {
namespace {

TEST(CollectiveTest, BusbwFactors) {
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::kAllreduce, 1), 0.0);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::kAllreduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::kAllreduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::kAllgather, 4), 0.75);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::kReducescatter, 2), 0.5);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::kAlltoall, 3), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::kBroadcast, 7), 1.0);
}

TEST(CollectiveTest, CountsFollowNcclTests) {
  // allreduce: the whole buffer; allgather: each rank's block of the output.
  EXPECT_EQ(count_for_size(Collective::kAllreduce, 1 << 20, DataType::kFloat32, 4), 1u << 18);
  EXPECT_EQ(count_for_size(Collective::kAllgather, 1 << 20, DataType::kFloat32, 4), 1u << 16);
  EXPECT_EQ(size_for_count(Collective::kAllgather, 1 << 16, DataType::kFloat32, 4), 1u << 20);
  EXPECT_EQ(input_elements(Collective::kAllgather, 10, 4), 10u);
  EXPECT_EQ(output_elements(Collective::kAllgather, 10, 4), 40u);
  EXPECT_EQ(input_elements(Collective::kReducescatter, 10, 4), 40u);
  EXPECT_EQ(output_elements(Collective::kReducescatter, 10, 4), 10u);
  // Never zero elements, and a size that is not a whole number of blocks is rounded down.
  EXPECT_EQ(count_for_size(Collective::kAllreduce, 2, DataType::kFloat32, 2), 1u);
  EXPECT_EQ(count_for_size(Collective::kAlltoall, 100, DataType::kFloat32, 3), 8u);
  EXPECT_EQ(size_for_count(Collective::kAlltoall, 8, DataType::kFloat32, 3), 96u);
}

TEST(CollectiveTest, ParseNames) {
  EXPECT_EQ(parse_collective("reducescatter").value(), Collective::kReducescatter);
  EXPECT_FALSE(parse_collective("reduce_scatter").ok());
}

// Simulates an allreduce and a reducescatter on the inputs of every rank and checks that the
// closed form accepts the true result and counts each corrupted element.
TEST(CheckTest, ClosedFormMatchesASimulatedReduction) {
  const int ranks = 3;
  const size_t count = 17;
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
    std::vector<float> sum(count * ranks, 0);
    for (size_t i = 0; i < sum.size(); ++i) {
      double acc = input_value(op, 0, ranks, i);
      for (int r = 1; r < ranks; ++r) {
        const double v = input_value(op, r, ranks, i);
        acc = op == ReduceOp::kSum   ? acc + v
              : op == ReduceOp::kMin ? std::min(acc, v)
              : op == ReduceOp::kMax ? std::max(acc, v)
                                     : acc * v;
      }
      sum[i] = static_cast<float>(acc);
    }
    CheckCall all;
    all.collective = Collective::kAllreduce;
    all.op = op;
    all.count = count * ranks;
    all.ranks = ranks;
    EXPECT_EQ(count_wrong(all, sum.data()), 0) << reduce_op_name(op);
    std::vector<float> bad = sum;
    bad[3] += 1;
    bad[40] = -7;
    EXPECT_EQ(count_wrong(all, bad.data()), 2) << reduce_op_name(op);
    CheckCall rs = all;
    rs.collective = Collective::kReducescatter;
    rs.count = count;
    rs.rank = 2;
    EXPECT_EQ(count_wrong(rs, sum.data() + 2 * count), 0) << reduce_op_name(op);
    // Block 0 is not block 2: with sum every element differs.
    if (op == ReduceOp::kSum) {
      EXPECT_EQ(count_wrong(rs, sum.data()), 17);
    }
  }
}

// bool and int16 through the closed form: each rank's input reduced in rank order by the
// kernels is accepted, a flipped element is counted. bool holds each value's truth.
TEST(CheckTest, BoolAndInt16AllreduceMatchTheKernels) {
  const int ranks = 3;
  const size_t count = 23;
  const std::pair<DataType, ReduceOp> cases[] = {{DataType::kBool, ReduceOp::kMin},
                                                 {DataType::kBool, ReduceOp::kMax},
                                                 {DataType::kBool, ReduceOp::kProduct},
                                                 {DataType::kInt16, ReduceOp::kSum},
                                                 {DataType::kUint16, ReduceOp::kMax}};
  for (const auto& [dtype, op] : cases) {
    CheckCall c;
    c.collective = Collective::kAllreduce;
    c.dtype = dtype;
    c.op = op;
    c.count = count;
    c.ranks = ranks;
    const size_t bytes = count * data_type_bytes(dtype);
    std::vector<uint8_t> acc(bytes), input(bytes);
    fill_input(c, acc.data());
    for (int r = 1; r < ranks; ++r) {
      c.rank = r;
      fill_input(c, input.data());
      kernels::reduce(acc.data(), input.data(), count, dtype, op);
    }
    EXPECT_EQ(count_wrong(c, acc.data()), 0) << data_type_name(dtype) << " " << reduce_op_name(op);
    acc[0] ^= 1;  // bool: true <-> false; int16: off by one
    EXPECT_EQ(count_wrong(c, acc.data()), 1) << data_type_name(dtype) << " " << reduce_op_name(op);
  }
}

TEST(CheckTest, BroadcastAndAllgatherInHalfPrecision) {
  const int ranks = 4;
  const size_t count = 9;
  CheckCall in;
  in.dtype = DataType::kBFloat16;
  in.collective = Collective::kAllgather;
  in.count = count;
  in.ranks = ranks;
  std::vector<uint16_t> gathered(count * ranks);
  for (int r = 0; r < ranks; ++r) {
    in.rank = r;
    fill_input(in, gathered.data() + r * count);
  }
  in.rank = 1;
  EXPECT_EQ(count_wrong(in, gathered.data()), 0);
  CheckCall b = in;
  b.collective = Collective::kBroadcast;
  b.root = 2;
  EXPECT_EQ(count_wrong(b, gathered.data() + 2 * count), 0);
  EXPECT_GT(count_wrong(b, gathered.data()), 0);
}

}  // namespace
}  // namespace bench
}  // namespace hora
