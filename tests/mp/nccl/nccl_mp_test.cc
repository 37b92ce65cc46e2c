// The NCCL backend on real GPUs, one rank per GPU under horarun: native collectives and hora's
// own algorithms (over NCCL's point to point with the CUDA kernels) on device buffers, against
// closed forms. Inputs are small integers, exact in every dtype, so every expected value is
// exact: input[i] = (rank + 1) * (i % 7 + 1).
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "collectives/selector.h"
#include "kernels/kernels.h"
#include "tests/kernels/cuda/device_buffer.h"
#include "tests/mp/nccl/nccl_mp_env.h"

namespace hora {
namespace mp {
namespace {

using collectives::Algorithm;
using collectives::Communicator;
using kernels_test::DeviceBuffer;

Deadline soon() { return Deadline::after_seconds(60); }

double input(int rank, size_t i) { return (rank + 1) * static_cast<double>(i % 7 + 1); }

void put(DataType dtype, uint8_t* p, double v) {
  switch (dtype) {
    case DataType::kUint8: *p = static_cast<uint8_t>(v); break;
    case DataType::kInt8: *reinterpret_cast<int8_t*>(p) = static_cast<int8_t>(v); break;
    case DataType::kBool: *p = v != 0 ? 1 : 0; break;
    case DataType::kInt16: {
      int16_t x = static_cast<int16_t>(v);
      std::memcpy(p, &x, 2);
      break;
    }
    case DataType::kUint16: {
      uint16_t x = static_cast<uint16_t>(v);
      std::memcpy(p, &x, 2);
      break;
    }
    case DataType::kInt32: {
      int32_t x = static_cast<int32_t>(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case DataType::kInt64: {
      int64_t x = static_cast<int64_t>(v);
      std::memcpy(p, &x, 8);
      break;
    }
    case DataType::kFloat16: {
      uint16_t x = kernels::f32_to_f16(static_cast<float>(v));
      std::memcpy(p, &x, 2);
      break;
    }
    case DataType::kBFloat16: {
      uint16_t x = kernels::f32_to_bf16(static_cast<float>(v));
      std::memcpy(p, &x, 2);
      break;
    }
    case DataType::kFloat32: {
      float x = static_cast<float>(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case DataType::kFloat64: std::memcpy(p, &v, 8); break;
  }
}

double get(DataType dtype, const uint8_t* p) {
  switch (dtype) {
    case DataType::kUint8:
    case DataType::kBool: return *p;
    case DataType::kInt8: return *reinterpret_cast<const int8_t*>(p);
    case DataType::kInt16: {
      int16_t x;
      std::memcpy(&x, p, 2);
      return x;
    }
    case DataType::kUint16: {
      uint16_t x;
      std::memcpy(&x, p, 2);
      return x;
    }
    case DataType::kInt32: {
      int32_t x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case DataType::kInt64: {
      int64_t x;
      std::memcpy(&x, p, 8);
      return static_cast<double>(x);
    }
    case DataType::kFloat16: {
      uint16_t x;
      std::memcpy(&x, p, 2);
      return kernels::f16_to_f32(x);
    }
    case DataType::kBFloat16: {
      uint16_t x;
      std::memcpy(&x, p, 2);
      return kernels::bf16_to_f32(x);
    }
    case DataType::kFloat32: {
      float x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case DataType::kFloat64: {
      double x;
      std::memcpy(&x, p, 8);
      return x;
    }
  }
  return 0;
}

// This rank's input for `count` elements (offset by `first` in the formula's index).
std::vector<uint8_t> make_input(DataType dtype, int rank, size_t count, size_t first = 0) {
  std::vector<uint8_t> bytes(count * data_type_bytes(dtype));
  for (size_t i = 0; i < count; ++i)
    put(dtype, bytes.data() + i * data_type_bytes(dtype), input(rank, first + i));
  return bytes;
}

double reduced(ReduceOp op, DataType dtype, int n, size_t i) {
  double acc = input(0, i);
  for (int r = 1; r < n; ++r) {
    const double x = input(r, i);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAverage: acc += x; break;
      case ReduceOp::kMin: acc = std::min(acc, x); break;
      case ReduceOp::kMax: acc = std::max(acc, x); break;
      case ReduceOp::kProduct: acc *= x; break;
      case ReduceOp::kAdasum: break;  // not elementwise: not in this test
    }
  }
  if (dtype == DataType::kBool) return acc != 0 ? 1 : 0;
  return op == ReduceOp::kAverage ? acc / n : acc;
}

// Counts the elements of `out` (device) that differ from expected(i) and reports the first.
void expect_values(const DeviceBuffer& out, DataType dtype, size_t count, size_t first_index,
                   const std::function<double(size_t)>& expected, const std::string& what) {
  const std::vector<uint8_t> host = out.download();
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    const double got = get(dtype, host.data() + i * data_type_bytes(dtype));
    const double want = expected(first_index + i);
    if (got != want && wrong++ == 0)
      ADD_FAILURE() << what << ": element " << i << " is " << got << ", expected " << want;
  }
  EXPECT_EQ(wrong, 0u) << what;
}

struct AllreduceCase {
  DataType dtype;
  ReduceOp op;
};

void run_allreduce_cases(Algorithm algo, const std::vector<AllreduceCase>& cases) {
  Communicator& comm = nccl_mp_communicator();
  const int n = comm.size();
  for (const AllreduceCase& c : cases) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{1031}, size_t{(1 << 20) + 3}}) {
      const std::string what = std::string(collectives::algorithm_name(algo)) + " " +
                               data_type_name(c.dtype) + " " + reduce_op_name(c.op) + " x" +
                               std::to_string(count) + " on " + std::to_string(n) + " ranks";
      const size_t bytes = count * data_type_bytes(c.dtype);
      DeviceBuffer in(bytes), out(bytes);
      in.upload(make_input(c.dtype, comm.rank(), count));
      collectives::AlgorithmOptions options;
      options.deadline = soon();
      for (bool in_place : {false, true}) {
        if (in_place) in.upload(make_input(c.dtype, comm.rank(), count));
        DeviceBuffer& result = in_place ? in : out;
        Status s = collectives::run_allreduce(algo, comm, in.get(), result.get(), count, c.dtype,
                                              c.op, options);
        ASSERT_TRUE(s.ok()) << what << ": " << s.to_string();
        expect_values(
            result, c.dtype, count, 0, [&](size_t i) { return reduced(c.op, c.dtype, n, i); },
            what + (in_place ? " in place" : ""));
      }
    }
  }
}

TEST(NcclMp, NativeAllreduce) {
  run_allreduce_cases(Algorithm::kNative, {{DataType::kFloat32, ReduceOp::kSum},
                                           {DataType::kFloat32, ReduceOp::kAverage},
                                           {DataType::kBFloat16, ReduceOp::kSum},
                                           {DataType::kFloat16, ReduceOp::kMax},
                                           {DataType::kInt32, ReduceOp::kMin},
                                           {DataType::kInt64, ReduceOp::kProduct},
                                           {DataType::kUint8, ReduceOp::kSum},
                                           {DataType::kFloat64, ReduceOp::kAverage}});
}

TEST(NcclMp, HoraAlgorithmsOverNcclPointToPoint) {
  for (Algorithm algo : {Algorithm::kRing, Algorithm::kTree, Algorithm::kRecursiveDoubling}) {
    run_allreduce_cases(algo, {{DataType::kFloat32, ReduceOp::kSum},
                               {DataType::kBFloat16, ReduceOp::kAverage},
                               {DataType::kInt16, ReduceOp::kSum},  // NCCL has no int16
                               {DataType::kBool, ReduceOp::kMax},
                               {DataType::kInt64, ReduceOp::kMin}});
  }
}

TEST(NcclMp, AutoOnInt16NamesTheAlgorithmsThatReduceIt) {
  // int16 through auto: the selector takes native, which NCCL cannot reduce; the error says
  // which algorithms would. (One rank copies: nothing to refuse.)
  Communicator& comm = nccl_mp_communicator();
  if (comm.size() == 1) GTEST_SKIP() << "one rank: auto copies";
  DeviceBuffer buf(64);
  collectives::AlgorithmOptions options;
  options.deadline = soon();
  Status s = collectives::run_allreduce(Algorithm::kAuto, comm, buf.get(), buf.get(), 8,
                                        DataType::kInt16, ReduceOp::kSum, options);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.to_string();
  EXPECT_NE(s.message().find("HORA_ALLREDUCE_ALGO"), std::string::npos) << s.message();
}

// Rank r contributes r + 1 elements (rank 1 none, to cover an empty block).
std::vector<size_t> uneven_counts(int n) {
  std::vector<size_t> counts(n);
  for (int r = 0; r < n; ++r) counts[r] = r == 1 ? 0 : 1000 * (r + 1) + 1;
  return counts;
}

TEST(NcclMp, AllgathervBroadcastReducescatterAlltoallv) {
  Communicator& comm = nccl_mp_communicator();
  const int n = comm.size();
  const int r = comm.rank();
  const DataType dtype = DataType::kFloat32;
  const size_t elem = data_type_bytes(dtype);
  const std::vector<size_t> counts = uneven_counts(n);
  std::vector<size_t> offsets(n + 1, 0);
  for (int k = 0; k < n; ++k) offsets[k + 1] = offsets[k] + counts[k];
  const size_t total = offsets[n];
  collectives::AlgorithmOptions options;
  options.deadline = soon();
  for (bool native : {true, false}) {
    const std::string how = native ? "native" : "hora";
    {  // allgatherv: block k holds rank k's input at indices offsets[k]...
      DeviceBuffer in(counts[r] * elem), out(total * elem);
      in.upload(make_input(dtype, r, counts[r], offsets[r]));
      Status s =
          native ? comm.allgatherv(in.get(), out.get(), counts, dtype, soon())
                 : collectives::ring_allgatherv(comm, in.get(), out.get(), counts, dtype, options);
      ASSERT_TRUE(s.ok()) << how << " allgatherv: " << s.to_string();
      expect_values(
          out, dtype, total, 0,
          [&](size_t i) {
            int k = 0;
            while (i >= offsets[k + 1]) ++k;
            return input(k, i);
          },
          how + " allgatherv");
    }
    {  // broadcast from the last rank
      const int root = n - 1;
      DeviceBuffer buf(total * elem + elem);
      buf.upload(make_input(dtype, r, total + 1));
      Status s = native ? comm.broadcast(buf.get(), total + 1, dtype, root, soon())
                        : collectives::pipelined_broadcast(comm, buf.get(), buf.get(), total + 1,
                                                           dtype, root, options);
      ASSERT_TRUE(s.ok()) << how << " broadcast: " << s.to_string();
      expect_values(
          buf, dtype, total + 1, 0, [&](size_t i) { return input(root, i); }, how + " broadcast");
    }
    {  // reducescatter (sum) of uneven blocks
      DeviceBuffer in(total * elem), out(counts[r] * elem + elem);
      in.upload(make_input(dtype, r, total));
      Status s =
          native ? comm.reducescatter(in.get(), out.get(), counts, dtype, ReduceOp::kSum, soon())
                 : collectives::ring_reducescatter(comm, in.get(), out.get(), counts, dtype,
                                                   ReduceOp::kSum, options);
      ASSERT_TRUE(s.ok()) << how << " reducescatter: " << s.to_string();
      expect_values(
          out, dtype, counts[r], offsets[r],
          [&](size_t i) { return reduced(ReduceOp::kSum, dtype, n, i); }, how + " reducescatter");
    }
    {  // alltoallv: rank r sends p + r + 1 elements to p, each the sender's input at 100 p + j
      std::vector<size_t> send(n), recv(n);
      for (int p = 0; p < n; ++p) {
        send[p] = p + r + 1;
        recv[p] = r + p + 1;
      }
      const size_t send_total = std::accumulate(send.begin(), send.end(), size_t{0});
      const size_t recv_total = std::accumulate(recv.begin(), recv.end(), size_t{0});
      std::vector<uint8_t> host(send_total * elem);
      size_t at = 0;
      for (int p = 0; p < n; ++p)
        for (size_t j = 0; j < send[p]; ++j, ++at)
          put(dtype, host.data() + at * elem, input(r, 100 * p + j));
      DeviceBuffer in(send_total * elem), out(recv_total * elem);
      in.upload(host);
      Status s = native ? comm.alltoallv(in.get(), send, out.get(), recv, dtype, soon())
                        : collectives::pairwise_alltoallv(comm, in.get(), send, out.get(), recv,
                                                          dtype, options);
      ASSERT_TRUE(s.ok()) << how << " alltoallv: " << s.to_string();
      std::vector<double> expected;
      for (int p = 0; p < n; ++p)
        for (size_t j = 0; j < recv[p]; ++j) expected.push_back(input(p, 100 * r + j));
      expect_values(
          out, dtype, recv_total, 0, [&](size_t i) { return expected[i]; }, how + " alltoallv");
    }
  }
  EXPECT_TRUE(comm.barrier(soon()).ok());
}

TEST(NcclMp, PointToPointAroundTheRing) {
  Communicator& comm = nccl_mp_communicator();
  const int n = comm.size();
  const int r = comm.rank();
  const DataType dtype = DataType::kInt32;
  for (size_t count : {size_t{0}, size_t{1}, size_t{1} << 18}) {
    DeviceBuffer send(count * 4), recv(count * 4);
    send.upload(make_input(dtype, r, count));
    auto in = comm.irecv((r - 1 + n) % n, recv.get(), count * 4, 7);
    ASSERT_TRUE(in.ok()) << in.status().to_string();
    auto out = comm.isend((r + 1) % n, send.get(), count * 4, 7);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    ASSERT_TRUE(in.value()->wait(soon()).ok());
    ASSERT_TRUE(out.value()->wait(soon()).ok());
    expect_values(
        recv, dtype, count, 0, [&](size_t i) { return input((r - 1 + n) % n, i); },
        "ring exchange of " + std::to_string(count));
  }
}

}  // namespace
}  // namespace mp
}  // namespace hora
