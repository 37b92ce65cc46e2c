// The job's communicator across processes (whatever HORA_BACKEND gave, gloo first): point to
// point, each native collective against closed-form values, and hora's own algorithms run
// over the backend's send/recv, checked by tests/support/collective_checks.h.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "hora/hora.h"
#include "tests/mp/mp_env.h"
#include "tests/support/collective_checks.h"

namespace hora {
namespace mp {
namespace {

using collectives::Communicator;
namespace ts = test_support;

TEST(CommunicatorMp, LayoutMatchesTheCommunicator) {
  Communicator& c = mp_communicator();
  EXPECT_EQ(c.rank(), hora::rank());
  EXPECT_EQ(c.size(), hora::size());
  EXPECT_GE(hora::local_rank(), 0);
  EXPECT_LT(hora::local_rank(), hora::local_size());
}

TEST(CommunicatorMp, RingExchange) {
  Communicator& c = mp_communicator();
  if (c.size() == 1) GTEST_SKIP() << "one rank: no peer";
  const int next = (c.rank() + 1) % c.size(), prev = (c.rank() + c.size() - 1) % c.size();
  for (size_t count : {size_t{0}, size_t{1}, size_t{4099}, size_t{1} << 20}) {
    std::vector<int32_t> out(count), in(count, -1);
    for (size_t i = 0; i < count; ++i) out[i] = static_cast<int32_t>(c.rank() * 7919 + i);
    auto rq = c.irecv(prev, in.data(), count * 4, 21);
    ASSERT_TRUE(rq.ok()) << rq.status().to_string();
    ASSERT_TRUE(c.send(next, out.data(), count * 4, 21, mp_deadline()).ok());
    Status s = rq.value()->wait(mp_deadline());
    ASSERT_TRUE(s.ok()) << s.to_string();
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(in[i], static_cast<int32_t>(prev * 7919 + i)) << "count " << count << " i " << i;
  }
}

TEST(CommunicatorMp, NativeAllreduceClosedForm) {
  Communicator& c = mp_communicator();
  if (std::string(c.backend_name()) == "builtin")
    GTEST_SKIP() << "the builtin backend has no native collectives (hora's algorithms run on it)";
  const int n = c.size();
  std::vector<float> buf(1009);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(c.rank() + i);
  ASSERT_TRUE(c.allreduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32, ReduceOp::kSum,
                          mp_deadline())
                  .ok());
  // sum over r of (r + i) = n*i + n(n-1)/2
  for (size_t i = 0; i < buf.size(); ++i)
    ASSERT_EQ(buf[i], static_cast<float>(n * i + n * (n - 1) / 2)) << i;
  std::vector<int64_t> mx(5, c.rank()), out(5);
  ASSERT_TRUE(
      c.allreduce(mx.data(), out.data(), 5, DataType::kInt64, ReduceOp::kMax, mp_deadline()).ok());
  for (int64_t v : out) EXPECT_EQ(v, n - 1);
}

TEST(CommunicatorMp, NativeAllreduceMatrix) {
  Communicator& c = mp_communicator();
  if (std::string(c.backend_name()) == "builtin")
    GTEST_SKIP() << "the builtin backend has no native collectives (hora's algorithms run on it)";
  ts::AllreduceFn fn = [](Communicator& comm, const void* in, void* out, size_t count,
                          DataType dtype, ReduceOp op) {
    return comm.allreduce(in, out, count, dtype, op, mp_deadline());
  };
  for (int d = 0; d < kNumDataTypes; ++d) {
    const DataType dtype = static_cast<DataType>(d);
    for (const auto& cs : ts::allreduce_cases(c.size(), dtype, dtype == DataType::kFloat32)) {
      Status s = ts::check_allreduce(c, fn, cs, /*repeats=*/2);
      ASSERT_TRUE(s.ok()) << s.to_string();
    }
  }
}

TEST(CommunicatorMp, NativeAllgathervBroadcastAlltoallvReducescatterBarrier) {
  Communicator& c = mp_communicator();
  if (std::string(c.backend_name()) == "builtin")
    GTEST_SKIP() << "the builtin backend has no native collectives (hora's algorithms run on it)";
  const int p = c.size();
  ts::AllgathervFn ag = [](Communicator& comm, const void* in, void* out,
                           const std::vector<size_t>& counts, DataType dtype) {
    return comm.allgatherv(in, out, counts, dtype, mp_deadline());
  };
  ts::BroadcastFn bc = [](Communicator& comm, const void* in, void* out, size_t count,
                          DataType dtype, int root) {
    if (in != out && comm.rank() == root) std::memcpy(out, in, count * data_type_bytes(dtype));
    return comm.broadcast(out, count, dtype, root, mp_deadline());
  };
  ts::AlltoallvFn a2a = [](Communicator& comm, const void* in, const std::vector<size_t>& sc,
                           void* out, const std::vector<size_t>& rc, DataType dtype) {
    return comm.alltoallv(in, sc, out, rc, dtype, mp_deadline());
  };
  ts::ReducescatterFn rs = [](Communicator& comm, const void* in, void* out,
                              const std::vector<size_t>& counts, DataType dtype, ReduceOp op) {
    return comm.reducescatter(in, out, counts, dtype, op, mp_deadline());
  };
  std::vector<size_t> uneven;
  for (int r = 0; r < p; ++r) uneven.push_back(r % 2 == 0 ? 0 : 1000 + r);
  for (bool in_place : {false, true}) {
    Status s = ts::check_allgatherv(c, ag, uneven, DataType::kBFloat16, in_place);
    ASSERT_TRUE(s.ok()) << s.to_string();
    s = ts::check_allgatherv(c, ag, std::vector<size_t>(p, 3), DataType::kInt8, in_place);
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
  for (int root = 0; root < p; ++root) {
    Status s = ts::check_broadcast(c, bc, 100003, DataType::kFloat32, root, root % 2 == 1);
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
  for (size_t scale : {size_t{1}, size_t{257}}) {
    Status s = ts::check_alltoallv(c, a2a, scale, DataType::kInt32);
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
  std::vector<size_t> blocks;
  for (int r = 0; r < p; ++r) blocks.push_back(r % 2 == 0 ? 1 : 513 + r);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kProduct}) {
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kInt64}) {
      Status s = ts::check_reducescatter(c, rs, blocks, dtype, op, op == ReduceOp::kSum);
      ASSERT_TRUE(s.ok()) << s.to_string();
    }
  }
  ASSERT_TRUE(c.barrier(mp_deadline()).ok());
}

// hora's own algorithms over this backend's point to point.
TEST(CommunicatorMp, HoraAlgorithmsOverTheBackend) {
  Communicator& c = mp_communicator();
  collectives::AlgorithmOptions options;
  options.deadline = mp_deadline();
  options.segment_bytes = 4096;  // reach the many-segment paths
  using AlgoFn = Status (*)(Communicator&, const void*, void*, size_t, DataType, ReduceOp,
                            const collectives::AlgorithmOptions&);
  for (AlgoFn algo : {&collectives::ring_allreduce, &collectives::tree_allreduce,
                      &collectives::recursive_doubling_allreduce}) {
    ts::AllreduceFn fn = [&](Communicator& comm, const void* in, void* out, size_t count,
                             DataType dtype, ReduceOp op) {
      return algo(comm, in, out, count, dtype, op, options);
    };
    for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16, DataType::kInt32}) {
      for (const auto& cs : ts::allreduce_cases(c.size(), dtype, false)) {
        Status s = ts::check_allreduce(c, fn, cs);
        ASSERT_TRUE(s.ok()) << s.to_string();
      }
    }
  }
  ts::AllgathervFn ag = [&](Communicator& comm, const void* in, void* out,
                            const std::vector<size_t>& counts, DataType dtype) {
    return collectives::ring_allgatherv(comm, in, out, counts, dtype, options);
  };
  std::vector<size_t> counts;
  for (int r = 0; r < c.size(); ++r) counts.push_back(2000 + 3 * r);
  Status s = ts::check_allgatherv(c, ag, counts, DataType::kFloat64, false);
  ASSERT_TRUE(s.ok()) << s.to_string();
  ASSERT_TRUE(collectives::dissemination_barrier(c, options).ok());
}

}  // namespace
}  // namespace mp
}  // namespace hora
