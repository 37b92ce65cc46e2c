// The builtin communicator's single-copy shared-memory allreduce, broadcast, allgatherv and
// reducescatter (collectives/backends/builtin/shm_allreduce.h), across fork()ed processes on
// this host:
// - every dtype and op defined on it (bool: min, max, product), counts 0, 1, N-1, a prime and chunk
// multiples +/- 1, in place and out
//   of place, from private memory and from shared_buffer() (the skipped copy-in) on every rank
//   or on some, for N = 1..5;
//   results bitwise equal to a rank-order reference and across ranks; allgatherv and
//   reducescatter with uneven (and empty) blocks, broadcast from every root;
// - a peer killed while the others wait in the allreduce is named (kRemote) by every survivor,
//   also by those that learn it from another survivor; nothing is left in /dev/shm;
// - abort() and the Deadline end a wait (thread ranks).
#include <dirent.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "hora/data_type.h"
#include "hora/reduce_op.h"
#include "kernels/kernels.h"
#include "tests/collectives/backends/builtin/builtin_test_util.h"

namespace hora {
namespace collectives {
namespace builtin_test {
namespace {

constexpr size_t kSlotBytes = 4096;  // tiny, to reach the many-chunk paths
constexpr size_t kSmallBytes = 256;

BuiltinOptions exchange_options() {
  BuiltinOptions o = test_options(true);
  o.shm_exchange_slot_bytes = kSlotBytes;
  o.shm_small_bytes = kSmallBytes;
  o.shm_shared_bytes = 64 * 1024;
  return o;
}

// Element i of rank r's input, as a double, converted to the dtype by store_value.
double input_value(int rank, size_t i, DataType dtype, ReduceOp op) {
  if (dtype == DataType::kBool) {  // 0 (3 in 7), else the bytes 1, 2, 0x80 (share no bit)
    static const double kBytes[7] = {0, 0, 0, 1, 2, 128, 1};
    return kBytes[(rank * 37 + i * 11) % 7];
  }
  if (op == ReduceOp::kProduct)
    return ((rank + i) % 3 == 0) ? 2.0 : (is_floating(dtype) ? 0.75 : 1.0);
  if (is_floating(dtype))
    return (static_cast<double>((rank * 37 + i * 11) % 101) - 50.0) / 8.0 + 0.1;
  if (dtype == DataType::kUint8 || dtype == DataType::kUint16)
    return static_cast<double>((rank * 37 + i * 11) % 251);
  return static_cast<double>((rank * 37 + i * 11) % 201) - 100.0;
}

void store_value(uint8_t* p, DataType dtype, double v) {
  switch (dtype) {
    case DataType::kUint8:
    case DataType::kBool: *p = static_cast<uint8_t>(v); break;
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
    case DataType::kInt8: *reinterpret_cast<int8_t*>(p) = static_cast<int8_t>(v); break;
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

std::vector<uint8_t> make_input(int rank, size_t count, DataType dtype, ReduceOp op) {
  const size_t esize = data_type_bytes(dtype);
  std::vector<uint8_t> buf(count * esize);
  for (size_t i = 0; i < count; ++i)
    store_value(buf.data() + i * esize, dtype, input_value(rank, i, dtype, op));
  return buf;
}

// The reduction in rank order 0..n-1, scaled once for kAverage: what the allreduce promises.
std::vector<uint8_t> reference(int n, size_t count, DataType dtype, ReduceOp op) {
  const ReduceOp kop = op == ReduceOp::kAverage ? ReduceOp::kSum : op;
  std::vector<uint8_t> acc = make_input(0, count, dtype, op);
  for (int r = 1; r < n; ++r) {
    std::vector<uint8_t> x = make_input(r, count, dtype, op);
    kernels::reduce(acc.data(), x.data(), count, dtype, kop);
  }
  if (op == ReduceOp::kAverage && n > 1) kernels::scale(acc.data(), count, dtype, 1.0 / n);
  return acc;
}

uint64_t fnv1a(const uint8_t* p, size_t bytes, uint64_t h) {
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

std::vector<size_t> counts_for(int n, DataType dtype) {
  const size_t chunk = kSlotBytes / data_type_bytes(dtype);
  std::vector<size_t> counts = {0,
                                1,
                                static_cast<size_t>(n > 1 ? n - 1 : 2),
                                97,
                                1009,
                                chunk - 1,
                                chunk,
                                chunk + 1,
                                3 * chunk - 1,
                                3 * chunk + 1};
  return counts;
}

const DataType kDtypes[] = {DataType::kUint8,   DataType::kInt8,     DataType::kInt16,
                            DataType::kUint16,  DataType::kInt32,    DataType::kInt64,
                            DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                            DataType::kFloat64, DataType::kBool};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                         ReduceOp::kProduct};

// One rank of the matrix: every case, checked against the reference; returns the hash of every
// output so that the ranks can compare bits.
Status run_matrix(Communicator& comm, uint64_t* hash) {
  const int n = comm.size();
  const int rank = comm.rank();
  const Deadline deadline = Deadline::after(std::chrono::seconds(120));
  uint8_t* shared = static_cast<uint8_t*>(comm.shared_buffer(64 * 1024));
  if (n > 1 && shared == nullptr) return Status::internal("shared_buffer(64 KiB) returned null");
  *hash = 1469598103934665603ull;
  for (DataType dtype : kDtypes) {
    const size_t esize = data_type_bytes(dtype);
    for (ReduceOp op : kOps) {
      if (!is_reduce_op_defined(op, dtype)) continue;  // bool sum / average
      for (size_t count : counts_for(n, dtype)) {
        const std::vector<uint8_t> want = reference(n, count, dtype, op);
        const std::vector<uint8_t> input = make_input(rank, count, dtype, op);
        // bit 0: in place; bit 1: input in shared memory; 4 and 5: shared on some ranks only.
        for (int mode = 0; mode < 6; ++mode) {
          const bool in_place = mode & 1;
          const bool from_shared = mode < 4 ? (mode & 2) != 0 : (rank + mode) % 2 == 0;
          if (from_shared && shared == nullptr) continue;
          std::vector<uint8_t> priv(input.size() + 1), out(input.size() + 1, 0xEE);
          uint8_t* in = from_shared ? shared : priv.data();
          if (!input.empty()) std::memcpy(in, input.data(), input.size());
          uint8_t* dst = in_place ? in : out.data();
          std::string what = std::string(data_type_name(dtype)) + " " + reduce_op_name(op) +
                             " count " + std::to_string(count) + (in_place ? " in place" : "") +
                             (from_shared ? " from shared_buffer" : "");
          Status st = comm.allreduce(in, dst, count, dtype, op, deadline);
          if (!st.ok()) return st.with_context(" (" + what + ")");
          if (count > 0 && std::memcmp(dst, want.data(), want.size()) != 0) {
            size_t bad = 0;
            while (bad < want.size() && dst[bad] == want[bad]) ++bad;
            return Status::internal("rank " + std::to_string(rank) + " of " + std::to_string(n) +
                                    ": " + what + ": byte " + std::to_string(bad) + " (element " +
                                    std::to_string(bad / esize) +
                                    ") differs from the rank-order reference");
          }
          if (!in_place && out[input.size()] != 0xEE)
            return Status::internal(what + ": wrote past the end of out");
          *hash = fnv1a(dst, want.size(), *hash);
        }
      }
    }
  }
  // Allgatherv and reducescatter: uneven blocks (one empty, some over several slots), in place
  // and out of place.
  for (DataType dtype : {DataType::kFloat32, DataType::kInt64, DataType::kBFloat16}) {
    const size_t esize = data_type_bytes(dtype);
    const size_t chunk = kSlotBytes / esize;
    std::vector<size_t> counts(n);
    for (int q = 0; q < n; ++q) counts[q] = (q == 1) ? 0 : (q % 3 == 0 ? 2 * chunk + 3 : 5 + q);
    size_t total = 0, mine_at = 0;
    for (int q = 0; q < n; ++q) {
      if (q == rank) mine_at = total;
      total += counts[q];
    }
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMax}) {
      const std::vector<uint8_t> want = reference(n, total, dtype, op);
      const std::vector<uint8_t> input = make_input(rank, total, dtype, op);
      for (bool in_place : {false, true}) {
        const std::string what = std::string("reducescatter ") + data_type_name(dtype) + " " +
                                 reduce_op_name(op) + (in_place ? " in place" : "");
        std::vector<uint8_t> buf = input, out(counts[rank] * esize + 1, 0xEE);
        uint8_t* dst = in_place ? buf.data() + mine_at * esize : out.data();
        HORA_RETURN_IF_ERROR(comm.reducescatter(buf.data(), dst, counts, dtype, op, deadline));
        if (std::memcmp(dst, want.data() + mine_at * esize, counts[rank] * esize) != 0)
          return Status::internal("rank " + std::to_string(rank) + ": " + what +
                                  " differs from the rank-order reference");
      }
    }
    // Allgatherv: block q is make_input(q, ...)'s first counts[q] elements.
    std::vector<uint8_t> want;
    for (int q = 0; q < n; ++q) {
      std::vector<uint8_t> b = make_input(q, counts[q], dtype, ReduceOp::kSum);
      want.insert(want.end(), b.begin(), b.end());
    }
    const std::vector<uint8_t> mine = make_input(rank, counts[rank], dtype, ReduceOp::kSum);
    for (bool in_place : {false, true}) {
      std::vector<uint8_t> out(total * esize + 1, 0xEE);
      const uint8_t* src = mine.data();
      if (in_place) {
        if (!mine.empty()) std::memcpy(out.data() + mine_at * esize, mine.data(), mine.size());
        src = out.data() + mine_at * esize;
      }
      HORA_RETURN_IF_ERROR(comm.allgatherv(src, out.data(), counts, dtype, deadline));
      if (std::memcmp(out.data(), want.data(), want.size()) != 0 || out[want.size()] != 0xEE)
        return Status::internal("rank " + std::to_string(rank) + ": allgatherv " +
                                data_type_name(dtype) + (in_place ? " in place" : "") +
                                " differs from the blocks sent");
    }
  }
  // Broadcast from every root, over several chunks.
  for (int root = 0; root < n; ++root) {
    std::vector<uint8_t> buf(3 * kSlotBytes + 5);
    if (rank == root) fill_pattern(buf, 100 + root);
    HORA_RETURN_IF_ERROR(comm.broadcast(buf.data(), buf.size(), DataType::kUint8, root, deadline));
    HORA_RETURN_IF_ERROR(
        expect_pattern(buf, 100 + root, "broadcast from root " + std::to_string(root)));
  }
  return Status::OK();
}

class ShmAllreduceMatrix : public ::testing::TestWithParam<int> {};

TEST_P(ShmAllreduceMatrix, EveryDtypeOpCountAndPlacementIsBitwiseTheReference) {
  const int n = GetParam();
  auto results = run_processes(n, [n](int rank, Store& store) -> Status {
    HORA_ASSIGN_OR_RETURN(auto comm, make_builtin_communicator(rank, n, store, exchange_options()));
    uint64_t hash = 0;
    HORA_RETURN_IF_ERROR(run_matrix(*comm, &hash));
    return expect_same_hash(store, rank, n, hash);
  });
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(results[r].exit_code, 0) << "rank " << r << ": " << results[r].message;
}

INSTANTIATE_TEST_SUITE_P(Ranks, ShmAllreduceMatrix, ::testing::Values(1, 2, 3, 4, 5),
                         rank_count_name);

// Rank 1 of 4 dies after a few allreduces while the others are in the next one. Every survivor
// must fail with kRemote naming rank 1 (never kTimeout: the deadline is far away), whether it
// found the dead process itself or learnt it from another survivor's failure flag.
TEST(ShmAllreduceFailure, DeadPeerIsNamedByEverySurvivor) {
  const int n = 4;
  std::vector<std::string> left;
  auto results = run_processes(
      n,
      [](int rank, Store& store) -> Status {
        HORA_ASSIGN_OR_RETURN(auto comm,
                              make_builtin_communicator(rank, n, store, exchange_options()));
        std::vector<float> buf(5 * kSlotBytes / 4, 1.0f);
        const Deadline deadline = Deadline::after(std::chrono::seconds(120));
        for (int i = 0; i < 3; ++i)
          HORA_RETURN_IF_ERROR(comm->allreduce(buf.data(), buf.data(), buf.size(),
                                               DataType::kFloat32, ReduceOp::kSum, deadline));
        if (rank == 1) raise(SIGKILL);
        Status st = comm->allreduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32,
                                    ReduceOp::kSum, deadline);
        if (st.code() != StatusCode::kRemote || st.message().find("rank 1") == std::string::npos)
          return Status::internal("rank " + std::to_string(rank) +
                                  ": expected kRemote naming rank 1, got " + st.to_string());
        // The exchange stays failed: a later call returns at once with the same error.
        Status again = comm->allreduce(buf.data(), buf.data(), 1, DataType::kFloat32,
                                       ReduceOp::kSum, deadline);
        if (again.code() != StatusCode::kRemote)
          return Status::internal("after the failure: " + again.to_string());
        return Status::OK();
      },
      [&](std::vector<pid_t>& pids) {
        for (pid_t p : pids) {  // wait for every rank to end, reaping none (run_processes does)
          siginfo_t info;
          waitid(P_PID, static_cast<id_t>(p), &info, WEXITED | WNOWAIT);
        }
        left = segments_of(pids);
      });
  EXPECT_EQ(results[1].signal, SIGKILL);
  for (int r : {0, 2, 3})
    EXPECT_EQ(results[r].exit_code, 0) << "rank " << r << ": " << results[r].message;
  EXPECT_TRUE(left.empty()) << left.size() << " segment(s) left in /dev/shm, e.g. " << left[0];
}

// Thread ranks: rank 1 waits in an allreduce that rank 0 never joins; another thread aborts
// rank 1's communicator, which must end the wait with kRemote "aborted".
TEST(ShmAllreduceFailure, AbortEndsTheWait) {
  std::atomic<bool> done{false};
  auto results = run_threads(2, exchange_options(), [&](Communicator& comm) -> Status {
    if (comm.rank() == 0) {
      while (!done.load()) std::this_thread::yield();
      return Status::OK();
    }
    std::thread aborter([&comm] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      comm.abort();
    });
    float x = 1;
    Status st = comm.allreduce(&x, &x, 1, DataType::kFloat32, ReduceOp::kSum,
                               Deadline::after(std::chrono::seconds(120)));
    aborter.join();
    done.store(true);
    if (st.code() != StatusCode::kRemote || st.message().find("aborted") == std::string::npos)
      return Status::internal("expected kRemote 'aborted', got " + st.to_string());
    return Status::OK();
  });
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r].to_string();
}

// Thread ranks: rank 1 never joins; rank 0's allreduce returns kTimeout naming rank 1.
TEST(ShmAllreduceFailure, DeadlineGivesTimeoutNamingTheMissingRank) {
  std::atomic<bool> done{false};
  auto results = run_threads(2, exchange_options(), [&](Communicator& comm) -> Status {
    if (comm.rank() == 1) {
      while (!done.load()) std::this_thread::yield();
      return Status::OK();
    }
    std::vector<double> buf(3 * kSlotBytes / 8, 2.0);
    Status st = comm.allreduce(buf.data(), buf.data(), buf.size(), DataType::kFloat64,
                               ReduceOp::kSum, Deadline::after(std::chrono::milliseconds(300)));
    done.store(true);
    if (st.code() != StatusCode::kTimeout || st.message().find("rank(s) 1") == std::string::npos)
      return Status::internal("expected kTimeout naming rank 1, got " + st.to_string());
    return Status::OK();
  });
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r].to_string();
}

}  // namespace
}  // namespace builtin_test
}  // namespace collectives
}  // namespace hora
