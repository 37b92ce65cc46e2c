// allgatherv, reducescatter, broadcast, alltoallv, barrier and the shared contracts (scratch
// reuse, bad arguments) over the in-process communicator.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "collectives/scratch_pool.h"
#include "collectives/selector.h"
#include "tests/support/collective_checks.h"
#include "tests/support/multi_rank.h"

namespace hora {
namespace collectives {
namespace {

using test_support::run_ranks;
using test_support::SendMode;

const SendMode kModes[] = {SendMode::kEager, SendMode::kRendezvous};

const int kRankCounts[] = {1, 2, 3, 4, 5, 7};
const DataType kSomeTypes[] = {DataType::kUint8, DataType::kFloat16, DataType::kInt64,
                               DataType::kFloat32};

AlgorithmOptions tiny_segments(ScratchPool* pool, DataType dtype) {
  AlgorithmOptions options;
  options.deadline = Deadline::after(std::chrono::seconds(30));
  options.segment_bytes = 3 * data_type_bytes(dtype);
  options.scratch = pool;
  return options;
}

TEST(EvenSplitTest, FirstRemainderRanksGetOneMore) {
  EXPECT_EQ(even_split(10, 4), (std::vector<size_t>{3, 3, 2, 2}));
  EXPECT_EQ(even_split(2, 4), (std::vector<size_t>{1, 1, 0, 0}));
  EXPECT_EQ(even_split(0, 3), (std::vector<size_t>{0, 0, 0}));
  EXPECT_EQ(even_split(9, 3), (std::vector<size_t>{3, 3, 3}));
  EXPECT_EQ(even_split(5, 1), (std::vector<size_t>{5}));
}

TEST(AllgathervTest, UnevenAndZeroCountsInAndOutOfPlace) {
  for (SendMode mode : kModes) {
    for (int n : kRankCounts) {
      for (DataType dtype : kSomeTypes) {
        for (size_t base : {size_t{0}, size_t{1}, size_t{37}}) {
          std::vector<size_t> counts(n);
          for (int k = 0; k < n; ++k) counts[k] = (k % 3 == 1) ? 0 : base + 2 * k;
          for (bool in_place : {false, true}) {
            Status status = run_ranks(
                n,
                [&](Communicator& comm) -> Status {
                  ScratchPool pool;
                  AlgorithmOptions options = tiny_segments(&pool, dtype);
                  return test_support::check_allgatherv(
                      comm,
                      [&](Communicator& c, const void* in, void* out, const std::vector<size_t>& cs,
                          DataType dt) { return ring_allgatherv(c, in, out, cs, dt, options); },
                      counts, dtype, in_place);
                },
                mode);
            EXPECT_TRUE(status.ok()) << status.to_string();
          }
        }
      }
    }
  }
}

TEST(ReducescatterTest, EvenSplitAndCustomCountsEveryOp) {
  for (SendMode mode : kModes) {
    for (int n : kRankCounts) {
      for (DataType dtype : kSomeTypes) {
        for (int op = 0; op < kNumElementwiseReduceOps; ++op) {
          std::vector<std::vector<size_t>> splits = {even_split(0, n), even_split(n - 1, n),
                                                     even_split(101, n)};
          std::vector<size_t> custom(n);
          for (int k = 0; k < n; ++k) custom[k] = (k == 0) ? 0 : 5 * k + 1;
          splits.push_back(custom);
          for (const auto& counts : splits) {
            for (bool in_place : {false, true}) {
              Status status = run_ranks(
                  n,
                  [&](Communicator& comm) -> Status {
                    ScratchPool pool;
                    AlgorithmOptions options = tiny_segments(&pool, dtype);
                    return test_support::check_reducescatter(
                        comm,
                        [&](Communicator& c, const void* in, void* out,
                            const std::vector<size_t>& cs, DataType dt, ReduceOp o) {
                          return ring_reducescatter(c, in, out, cs, dt, o, options);
                        },
                        counts, dtype, static_cast<ReduceOp>(op), in_place);
                  },
                  mode);
              EXPECT_TRUE(status.ok()) << status.to_string();
            }
          }
        }
      }
    }
  }
}

// int16, uint16 and bool with every op defined on them (bool: min, max, product as logical
// and / or / and over the bytes 0, 1, 2 and 0x80).
TEST(ReducescatterTest, Int16Uint16BoolEveryDefinedOp) {
  for (int n : kRankCounts) {
    for (DataType dtype : {DataType::kInt16, DataType::kUint16, DataType::kBool}) {
      for (int op = 0; op < kNumElementwiseReduceOps; ++op) {
        if (!is_reduce_op_defined(static_cast<ReduceOp>(op), dtype)) continue;
        std::vector<size_t> custom(n);
        for (int k = 0; k < n; ++k) custom[k] = (k == 0) ? 0 : 5 * k + 1;
        for (const auto& counts : {even_split(101, n), custom}) {
          for (bool in_place : {false, true}) {
            Status status = run_ranks(n, [&](Communicator& comm) -> Status {
              ScratchPool pool;
              AlgorithmOptions options = tiny_segments(&pool, dtype);
              return test_support::check_reducescatter(
                  comm,
                  [&](Communicator& c, const void* in, void* out, const std::vector<size_t>& cs,
                      DataType dt,
                      ReduceOp o) { return ring_reducescatter(c, in, out, cs, dt, o, options); },
                  counts, dtype, static_cast<ReduceOp>(op), in_place);
            });
            EXPECT_TRUE(status.ok()) << status.to_string();
          }
        }
      }
    }
  }
}

TEST(BroadcastTest, EveryRootInAndOutOfPlace) {
  for (SendMode mode : kModes) {
    for (int n : kRankCounts) {
      for (DataType dtype : kSomeTypes) {
        for (size_t count : {size_t{0}, size_t{1}, size_t{1009}}) {
          for (int root = 0; root < n; ++root) {
            for (bool in_place : {false, true}) {
              Status status = run_ranks(
                  n,
                  [&](Communicator& comm) -> Status {
                    ScratchPool pool;
                    AlgorithmOptions options = tiny_segments(&pool, dtype);
                    options.segment_bytes = 64 * data_type_bytes(dtype);
                    return test_support::check_broadcast(
                        comm,
                        [&](Communicator& c, const void* in, void* out, size_t cnt, DataType dt,
                            int rt) {
                          return pipelined_broadcast(c, in, out, cnt, dt, rt, options);
                        },
                        count, dtype, root, in_place);
                  },
                  mode);
              EXPECT_TRUE(status.ok()) << status.to_string();
            }
          }
        }
      }
    }
  }
}

TEST(BroadcastTest, BadRootIsInvalidArgumentOnEveryRank) {
  Status status = run_ranks(3, [](Communicator& comm) -> Status {
    int value = 0;
    Status s = pipelined_broadcast(comm, &value, &value, 1, DataType::kInt32, 3, {});
    return s.code() == StatusCode::kInvalidArgument ? Status::OK()
                                                    : Status::internal(s.to_string());
  });
  EXPECT_TRUE(status.ok()) << status.to_string();
}

TEST(AlltoallvTest, PairwiseWithEmptyBlocks) {
  for (SendMode mode : kModes) {
    for (int n : kRankCounts) {
      for (DataType dtype : kSomeTypes) {
        for (size_t scale : {size_t{0}, size_t{1}, size_t{13}}) {
          Status status = run_ranks(
              n,
              [&](Communicator& comm) -> Status {
                AlgorithmOptions options;
                options.deadline = Deadline::after(std::chrono::seconds(30));
                return test_support::check_alltoallv(
                    comm,
                    [&](Communicator& c, const void* in, const std::vector<size_t>& sc, void* out,
                        const std::vector<size_t>& rc, DataType dt) {
                      return pairwise_alltoallv(c, in, sc, out, rc, dt, options);
                    },
                    scale, dtype);
              },
              mode);
          EXPECT_TRUE(status.ok()) << status.to_string();
        }
      }
    }
  }
}

TEST(BarrierTest, NoRankLeavesBeforeEveryRankEntered) {
  for (SendMode mode : kModes) {
    for (int n : kRankCounts) {
      std::atomic<int> entered{0};
      Status status = run_ranks(
          n,
          [&](Communicator& comm) -> Status {
            AlgorithmOptions options;
            options.deadline = Deadline::after(std::chrono::seconds(30));
            for (int round = 1; round <= 5; ++round) {
              entered.fetch_add(1);
              HORA_RETURN_IF_ERROR(dissemination_barrier(comm, options));
              int seen = entered.load();
              if (seen < round * n) {
                return Status::internal("left barrier " + std::to_string(round) + " after only " +
                                        std::to_string(seen) + " entries");
              }
              // Second barrier so no rank enters round + 1 before all have checked round.
              HORA_RETURN_IF_ERROR(dissemination_barrier(comm, options));
            }
            return Status::OK();
          },
          mode);
      EXPECT_TRUE(status.ok()) << n << " ranks: " << status.to_string();
    }
  }
}

TEST(ScratchPoolTest, NoGrowthAfterWarmUp) {
  Status status = run_ranks(4, [](Communicator& comm) -> Status {
    ScratchPool pool;
    AlgorithmOptions options;
    options.deadline = Deadline::after(std::chrono::seconds(30));
    options.scratch = &pool;
    options.segment_bytes = 4096;
    std::vector<float> buf(10007, 1.0f);
    std::vector<size_t> counts = even_split(buf.size(), comm.size());
    auto run_all = [&]() -> Status {
      HORA_RETURN_IF_ERROR(ring_allreduce(comm, buf.data(), buf.data(), buf.size(),
                                          DataType::kFloat32, ReduceOp::kMax, options));
      HORA_RETURN_IF_ERROR(tree_allreduce(comm, buf.data(), buf.data(), buf.size(),
                                          DataType::kFloat32, ReduceOp::kMax, options));
      HORA_RETURN_IF_ERROR(recursive_doubling_allreduce(
          comm, buf.data(), buf.data(), buf.size(), DataType::kFloat32, ReduceOp::kMax, options));
      std::vector<float> part(counts[comm.rank()]);
      return ring_reducescatter(comm, buf.data(), part.data(), counts, DataType::kFloat32,
                                ReduceOp::kMax, options);
    };
    HORA_RETURN_IF_ERROR(run_all());
    const uint64_t grown = pool.grow_count();
    const size_t held = pool.held_bytes();
    for (int i = 0; i < 3; ++i) HORA_RETURN_IF_ERROR(run_all());
    if (pool.grow_count() != grown || pool.held_bytes() != held) {
      return Status::internal("scratch grew after warm-up: " + std::to_string(grown) + " -> " +
                              std::to_string(pool.grow_count()));
    }
    if (grown == 0) return Status::internal("the algorithms never used the pool");
    return Status::OK();
  });
  EXPECT_TRUE(status.ok()) << status.to_string();
}

TEST(ArgumentsTest, WrongCountVectorsAreInvalidArgument) {
  Status status = run_ranks(2, [](Communicator& comm) -> Status {
    int value = 0;
    AlgorithmOptions options;
    std::vector<size_t> three = {1, 1, 1};
    if (ring_allgatherv(comm, &value, &value, three, DataType::kInt32, options).code() !=
        StatusCode::kInvalidArgument) {
      return Status::internal("allgatherv accepted 3 counts for 2 ranks");
    }
    if (ring_reducescatter(comm, &value, &value, three, DataType::kInt32, ReduceOp::kSum, options)
            .code() != StatusCode::kInvalidArgument) {
      return Status::internal("reducescatter accepted 3 counts for 2 ranks");
    }
    if (pairwise_alltoallv(comm, &value, three, &value, three, DataType::kInt32, options).code() !=
        StatusCode::kInvalidArgument) {
      return Status::internal("alltoallv accepted 3 counts for 2 ranks");
    }
    return Status::OK();
  });
  EXPECT_TRUE(status.ok()) << status.to_string();
}

// Sum and average on bool: every reduction refuses them on every rank, before sending
// anything, naming the op and the alternatives; count 0 and one rank included.
TEST(ArgumentsTest, BoolSumAndAverageAreRefusedByEveryReduction) {
  for (int n : {1, 3}) {
    Status status = run_ranks(n, [](Communicator& comm) -> Status {
      uint8_t flags[4] = {1, 0, 1, 1};
      uint8_t out[4] = {};
      const std::vector<size_t> counts = even_split(4, comm.size());
      AlgorithmOptions options;
      options.deadline = Deadline::after(std::chrono::seconds(30));
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
        const std::string want =
            std::string(" op ") + reduce_op_name(op) +
            " is not defined for bool; use min (logical and) or max (logical or)";
        const Status results[] = {
            ring_allreduce(comm, flags, out, 4, DataType::kBool, op, options),
            tree_allreduce(comm, flags, out, 4, DataType::kBool, op, options),
            recursive_doubling_allreduce(comm, flags, out, 0, DataType::kBool, op, options),
            ring_reducescatter(comm, flags, out, counts, DataType::kBool, op, options),
            run_allreduce(Algorithm::kNative, comm, flags, out, 4, DataType::kBool, op, options),
            run_allreduce(Algorithm::kAuto, comm, flags, flags, 4, DataType::kBool, op, options)};
        for (const Status& s : results) {
          if (s.code() != StatusCode::kInvalidArgument ||
              s.message().find(want) == std::string::npos)
            return Status::internal("bool " + std::string(reduce_op_name(op)) + " gave " +
                                    s.to_string());
        }
      }
      if (flags[0] != 1 || flags[1] != 0 || out[0] != 0)
        return Status::internal("a refused call wrote its buffers");
      return Status::OK();
    });
    EXPECT_TRUE(status.ok()) << n << " ranks: " << status.to_string();
  }
}

// The checks themselves must be able to fail: a wrong value, and a single flipped bit on one
// rank (which the value tolerance would accept but the bit comparison must not).
TEST(CollectiveChecksTest, DetectWrongValuesAndDivergentBits) {
  test_support::AllreduceCase c;
  c.count = 101;
  c.dtype = DataType::kFloat32;
  c.op = ReduceOp::kSum;
  Status copy_only = run_ranks(3, [&](Communicator& comm) -> Status {
    return test_support::check_allreduce(
        comm,
        [](Communicator&, const void* in, void* out, size_t count, DataType dt, ReduceOp) {
          std::memcpy(out, in, count * data_type_bytes(dt));
          return Status::OK();
        },
        c);
  });
  EXPECT_FALSE(copy_only.ok());
  EXPECT_NE(copy_only.message().find("element 0"), std::string::npos) << copy_only.to_string();

  Status flipped = run_ranks(3, [&](Communicator& comm) -> Status {
    return test_support::check_allreduce(
        comm,
        [](Communicator& cm, const void* in, void* out, size_t count, DataType dt, ReduceOp op) {
          HORA_RETURN_IF_ERROR(ring_allreduce(cm, in, out, count, dt, op, AlgorithmOptions()));
          if (cm.rank() == 2) static_cast<uint8_t*>(out)[40] ^= 1;  // lowest mantissa bit
          return Status::OK();
        },
        c);
  });
  EXPECT_FALSE(flipped.ok());
  EXPECT_NE(flipped.message().find("rank 2's bits differ"), std::string::npos)
      << flipped.to_string();
}

}  // namespace
}  // namespace collectives
}  // namespace hora
