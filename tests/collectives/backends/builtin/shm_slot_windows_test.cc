// Steps that use part of an exchange slot take it window after window (ShmExchange::slot), so
// consecutive calls of different sizes read and write different places in the slots. Here
// calls of changing sizes, each with data of its own (a stale window would show another
// call's values), come out right on every rank: allreduce on the short path and the chunked
// one, from private memory and in place in the shared region, and over spans; broadcast,
// allgatherv with uneven blocks, and reducescatter. fork()ed processes, N = 2..4.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/reduce_span.h"
#include "tests/collectives/backends/builtin/builtin_test_util.h"

namespace hora {
namespace collectives {
namespace builtin_test {
namespace {

constexpr size_t kSlotBytes = 64 * 1024;  // 16 windows of 4 KiB, 2 of 32 KiB
constexpr size_t kSmallBytes = 4 * 1024;  // above: the chunked path
constexpr size_t kSharedBytes = 256 * 1024;
constexpr int kCalls = 240;

// Element i of rank r's data in call c: distinct per call, exact as int32 sums.
int32_t value(int r, int c, size_t i) {
  return (r + 1) * 100003 + c * 1009 + static_cast<int32_t>(i % 50000);
}

int32_t sum_of(int n, int c, size_t i) {
  int32_t s = 0;
  for (int r = 0; r < n; ++r) s += value(r, c, i);
  return s;
}

// The same sizes on every rank: 1 .. 40,000 elements (up to 2.4 slots), a third of them under
// 256 (a quarter window); each kind of call (c % 6) gets sizes of every class in turn.
size_t count_for(int c) {
  uint32_t x = 2654435761u * static_cast<uint32_t>(c + 1);
  x ^= x >> 13;
  switch ((c + c / 6) % 3) {
    case 0: return 1 + x % 255;
    case 1: return 1 + x % 8000;
    default: return 1 + x % 40000;
  }
}

Status mismatch(int rank, int c, const std::string& what, size_t i, int64_t got, int64_t want) {
  return Status::internal("rank " + std::to_string(rank) + ", call " + std::to_string(c) + " (" +
                          what + "): element " + std::to_string(i) + " is " + std::to_string(got) +
                          ", expected " + std::to_string(want));
}

Status run_calls(Communicator& comm) {
  const int n = comm.size();
  const int rank = comm.rank();
  const Deadline deadline = Deadline::after(std::chrono::seconds(120));
  auto* shared = static_cast<int32_t*>(comm.shared_buffer(kSharedBytes));
  if (shared == nullptr) return Status::internal("shared_buffer returned null");
  for (int c = 0; c < kCalls; ++c) {
    const size_t count = count_for(c);
    std::vector<int32_t> in(count), out(count, -1);
    for (size_t i = 0; i < count; ++i) in[i] = value(rank, c, i);
    std::string what;
    switch (c % 6) {
      case 0:
      case 1: {
        what = "allreduce";
        HORA_RETURN_IF_ERROR(comm.allreduce(in.data(), out.data(), count, DataType::kInt32,
                                            ReduceOp::kSum, deadline));
        break;
      }
      case 2: {
        what = "allreduce in place in the shared region";
        const size_t at = (static_cast<size_t>(c) * 97) % 1024;  // a different place each call
        if ((at + count) * sizeof(int32_t) > kSharedBytes) return Status::internal("too big");
        std::copy(in.begin(), in.end(), shared + at);
        HORA_RETURN_IF_ERROR(comm.allreduce(shared + at, shared + at, count, DataType::kInt32,
                                            ReduceOp::kSum, deadline));
        std::copy(shared + at, shared + at + count, out.begin());
        break;
      }
      case 3: {
        what = "allreduce over spans";
        const size_t half = count / 2;
        std::vector<ReduceSpan> spans(2);
        spans[0].in = in.data();
        spans[0].out = out.data();
        spans[0].count = half;
        spans[1].in = in.data() + half;
        spans[1].out = out.data() + half;
        spans[1].count = count - half;
        HORA_RETURN_IF_ERROR(
            comm.allreduce_spans(spans, DataType::kInt32, ReduceOp::kSum, 1.0, 1.0, deadline));
        break;
      }
      case 4: {
        const int root = c % n;
        what = "broadcast from root " + std::to_string(root);
        std::vector<int32_t> buf(count, -1);
        if (rank == root) buf = in;
        HORA_RETURN_IF_ERROR(comm.broadcast(buf.data(), count, DataType::kInt32, root, deadline));
        for (size_t i = 0; i < count; ++i)
          if (buf[i] != value(root, c, i))
            return mismatch(rank, c, what, i, buf[i], value(root, c, i));
        continue;
      }
      default: {
        // Allgatherv of uneven blocks (rank q sends count / (q + 1) elements), then
        // reducescatter of the same layout.
        std::vector<size_t> counts(n);
        size_t total = 0;
        for (int q = 0; q < n; ++q) total += counts[q] = count / static_cast<size_t>(q + 1);
        std::vector<int32_t> gathered(total, -1);
        HORA_RETURN_IF_ERROR(
            comm.allgatherv(in.data(), gathered.data(), counts, DataType::kInt32, deadline));
        size_t at = 0;
        for (int q = 0; q < n; ++q) {
          for (size_t i = 0; i < counts[q]; ++i)
            if (gathered[at + i] != value(q, c, i))
              return mismatch(rank, c, "allgatherv, block " + std::to_string(q), i,
                              gathered[at + i], value(q, c, i));
          at += counts[q];
        }
        std::vector<int32_t> all(total), mine(counts[rank], -1);
        for (size_t i = 0; i < total; ++i) all[i] = value(rank, c, i);
        HORA_RETURN_IF_ERROR(comm.reducescatter(all.data(), mine.data(), counts, DataType::kInt32,
                                                ReduceOp::kSum, deadline));
        size_t first = 0;
        for (int q = 0; q < rank; ++q) first += counts[q];
        for (size_t i = 0; i < counts[rank]; ++i)
          if (mine[i] != sum_of(n, c, first + i))
            return mismatch(rank, c, "reducescatter", i, mine[i], sum_of(n, c, first + i));
        continue;
      }
    }
    for (size_t i = 0; i < count; ++i)
      if (out[i] != sum_of(n, c, i)) return mismatch(rank, c, what, i, out[i], sum_of(n, c, i));
  }
  return Status::OK();
}

class ShmSlotWindows : public ::testing::TestWithParam<int> {};

TEST_P(ShmSlotWindows, CallsOfChangingSizesEachReadTheirOwnData) {
  const int n = GetParam();
  auto results = run_processes(n, [n](int rank, Store& store) -> Status {
    BuiltinOptions o = test_options(true);
    o.shm_exchange_slot_bytes = kSlotBytes;
    o.shm_small_bytes = kSmallBytes;
    o.shm_shared_bytes = kSharedBytes;
    HORA_ASSIGN_OR_RETURN(auto comm, make_builtin_communicator(rank, n, store, o));
    return run_calls(*comm);
  });
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(results[r].exit_code, 0) << "rank " << r << ": " << results[r].message;
}

INSTANTIATE_TEST_SUITE_P(Ranks, ShmSlotWindows, ::testing::Values(2, 3, 4), rank_count_name);

}  // namespace
}  // namespace builtin_test
}  // namespace collectives
}  // namespace hora
