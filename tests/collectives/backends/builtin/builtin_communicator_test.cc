// The builtin communicator with ranks as threads (shared memory works across threads too):
// sizes, ordering, overlap, deadlines, mismatches, abort, for shm and for TCP only.
#include <gtest/gtest.h>

#include <chrono>

#include "tests/collectives/backends/builtin/builtin_test_util.h"

namespace hora {
namespace collectives {
namespace builtin_test {
namespace {

using std::chrono::milliseconds;

Deadline soon() { return Deadline::after(milliseconds(20000)); }

void expect_all_ok(const std::vector<Status>& results) {
  for (size_t r = 0; r < results.size(); ++r)
    EXPECT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r].to_string();
}

class BuiltinTransport : public ::testing::TestWithParam<std::tuple<bool, int>> {};

// Every rank sends 0 B, 1 B and 4 KiB to every rank (itself included) and 16 MiB around a ring.
TEST_P(BuiltinTransport, SendRecvSizesAcrossRanks) {
  const bool shm = std::get<0>(GetParam());
  const int n = std::get<1>(GetParam());
  auto results = run_threads(n, test_options(shm), [n](Communicator& comm) -> Status {
    const int me = comm.rank();
    if (comm.size() != n || std::string(comm.backend_name()) != "builtin")
      return Status::internal("wrong size or name");
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{4096}}) {
      std::vector<std::vector<uint8_t>> out(n, std::vector<uint8_t>(bytes)), in = out;
      std::vector<std::unique_ptr<Request>> reqs;
      for (int p = 0; p < n; ++p) {
        fill_pattern(out[p], me * 100 + p + bytes);
        HORA_ASSIGN_OR_RETURN(auto rr, comm.irecv(p, in[p].data(), bytes, 7));
        reqs.push_back(std::move(rr));
      }
      for (int p = 0; p < n; ++p) {
        HORA_ASSIGN_OR_RETURN(auto sr, comm.isend(p, out[p].data(), bytes, 7));
        reqs.push_back(std::move(sr));
      }
      for (auto& r : reqs) HORA_RETURN_IF_ERROR(r->wait(soon()));
      for (int p = 0; p < n; ++p)
        HORA_RETURN_IF_ERROR(
            expect_pattern(in[p], p * 100 + me + bytes,
                           "from rank " + std::to_string(p) + ", " + std::to_string(bytes) + " B"));
    }
    if (n > 1) {
      const size_t big = size_t{16} << 20;
      std::vector<uint8_t> out(big), in(big);
      fill_pattern(out, 1000 + me);
      int next = (me + 1) % n, prev = (me + n - 1) % n;
      HORA_ASSIGN_OR_RETURN(auto rr, comm.irecv(prev, in.data(), big, 9));
      HORA_ASSIGN_OR_RETURN(auto sr, comm.isend(next, out.data(), big, 9));
      HORA_RETURN_IF_ERROR(sr->wait(soon()));
      HORA_RETURN_IF_ERROR(rr->wait(soon()));
      HORA_RETURN_IF_ERROR(expect_pattern(in, 1000 + prev, "16 MiB from the ring"));
    }
    return Status::OK();
  });
  expect_all_ok(results);
}

INSTANTIATE_TEST_SUITE_P(ShmAndTcp, BuiltinTransport,
                         ::testing::Combine(::testing::Bool(), ::testing::Values(1, 2, 3, 4, 5)),
                         [](const ::testing::TestParamInfo<std::tuple<bool, int>>& info) {
                           return std::string(std::get<0>(info.param) ? "shm" : "tcp") + "_" +
                                  std::to_string(std::get<1>(info.param)) + "ranks";
                         });

class BuiltinBothTransports : public ::testing::TestWithParam<bool> {};

// Messages with one tag arrive in order; a recv for a later tag overtakes earlier ones
// (the earlier, including a large one whose sender is stuck on a full ring, get buffered).
TEST_P(BuiltinBothTransports, TagOrdering) {
  auto results = run_threads(2, test_options(GetParam()), [](Communicator& comm) -> Status {
    const size_t big = size_t{8} << 20;
    if (comm.rank() == 0) {
      std::vector<uint8_t> a(big), b(16), c(100);
      fill_pattern(a, 1);
      fill_pattern(b, 2);
      fill_pattern(c, 3);
      HORA_ASSIGN_OR_RETURN(auto ra, comm.isend(1, a.data(), a.size(), 1));
      HORA_ASSIGN_OR_RETURN(auto rb, comm.isend(1, b.data(), b.size(), 2));
      HORA_ASSIGN_OR_RETURN(auto rc, comm.isend(1, c.data(), c.size(), 1));
      HORA_RETURN_IF_ERROR(ra->wait(soon()));
      HORA_RETURN_IF_ERROR(rb->wait(soon()));
      return rc->wait(soon());
    }
    std::vector<uint8_t> a(big), b(16), c(100);
    HORA_RETURN_IF_ERROR(comm.recv(0, b.data(), b.size(), 2, soon()));
    HORA_RETURN_IF_ERROR(comm.recv(0, a.data(), a.size(), 1, soon()));
    HORA_RETURN_IF_ERROR(comm.recv(0, c.data(), c.size(), 1, soon()));
    HORA_RETURN_IF_ERROR(expect_pattern(a, 1, "first tag-1 message"));
    HORA_RETURN_IF_ERROR(expect_pattern(b, 2, "tag-2 message"));
    return expect_pattern(c, 3, "second tag-1 message");
  });
  expect_all_ok(results);
}

// Both ranks post irecv + isend of 16 MiB at once (a ring step), then both block-send first:
// neither may deadlock.
TEST_P(BuiltinBothTransports, OverlappedExchangeBothDirections) {
  auto results = run_threads(2, test_options(GetParam()), [](Communicator& comm) -> Status {
    const size_t big = size_t{16} << 20;
    const int me = comm.rank(), peer = 1 - me;
    std::vector<uint8_t> out(big), in(big);
    fill_pattern(out, 50 + me);
    for (int round = 0; round < 3; ++round) {
      HORA_ASSIGN_OR_RETURN(auto rr, comm.irecv(peer, in.data(), big, round));
      HORA_ASSIGN_OR_RETURN(auto sr, comm.isend(peer, out.data(), big, round));
      if (round % 2 == 0) {
        HORA_RETURN_IF_ERROR(rr->wait(soon()));
        HORA_RETURN_IF_ERROR(sr->wait(soon()));
      } else {
        HORA_RETURN_IF_ERROR(sr->wait(soon()));
        HORA_RETURN_IF_ERROR(rr->wait(soon()));
      }
      HORA_RETURN_IF_ERROR(
          expect_pattern(in, 50 + peer, "exchange round " + std::to_string(round)));
    }
    // Blocking send before recv on both sides.
    HORA_RETURN_IF_ERROR(comm.send(peer, out.data(), big, 77, soon()));
    HORA_RETURN_IF_ERROR(comm.recv(peer, in.data(), big, 77, soon()));
    return expect_pattern(in, 50 + peer, "send-send exchange");
  });
  expect_all_ok(results);
}

TEST_P(BuiltinBothTransports, RecvDeadlineNamesThePeer) {
  auto results = run_threads(2, test_options(GetParam()), [](Communicator& comm) -> Status {
    uint8_t byte = 0;
    if (comm.rank() == 1) {
      Status st = comm.recv(0, &byte, 1, 5, Deadline::after(milliseconds(200)));
      if (st.code() != StatusCode::kTimeout)
        return Status::internal("expected a timeout, got " + st.to_string());
      if (st.message().find("rank 0") == std::string::npos ||
          st.message().find("tag 5") == std::string::npos)
        return Status::internal("timeout does not name rank 0 and tag 5: " + st.to_string());
    }
    // Both meet again so neither leaves early.
    uint8_t out = 0;
    HORA_ASSIGN_OR_RETURN(auto sr, comm.isend(1 - comm.rank(), &out, 1, 6));
    HORA_RETURN_IF_ERROR(comm.recv(1 - comm.rank(), &byte, 1, 6, soon()));
    return sr->wait(soon());
  });
  expect_all_ok(results);
}

// A recv of the wrong size fails with kMismatch naming both sizes; the link goes on.
TEST_P(BuiltinBothTransports, SizeMismatchIsAnErrorAndTheLinkSurvives) {
  auto results = run_threads(2, test_options(GetParam()), [](Communicator& comm) -> Status {
    std::vector<uint8_t> buf(1000);
    if (comm.rank() == 0) {
      HORA_RETURN_IF_ERROR(comm.send(1, buf.data(), 1000, 1, soon()));
      fill_pattern(buf, 9);
      return comm.send(1, buf.data(), 1000, 1, soon());
    }
    Status st = comm.recv(0, buf.data(), 500, 1, soon());
    if (st.code() != StatusCode::kMismatch || st.message().find("1000") == std::string::npos ||
        st.message().find("500") == std::string::npos)
      return Status::internal("expected a mismatch naming 1000 and 500, got " + st.to_string());
    HORA_RETURN_IF_ERROR(comm.recv(0, buf.data(), 1000, 1, soon()));
    return expect_pattern(buf, 9, "message after the mismatch");
  });
  expect_all_ok(results);
}

TEST_P(BuiltinBothTransports, AbortWakesAWaiter) {
  auto results = run_threads(2, test_options(GetParam()), [](Communicator& comm) -> Status {
    uint8_t byte;
    if (comm.rank() == 0) {
      // Stay until rank 1 has aborted and left (its leaving ends this wait, or it times out).
      (void)comm.recv(1, &byte, 1, 2, Deadline::after(milliseconds(3000)));
      return Status::OK();
    }
    auto start = std::chrono::steady_clock::now();
    std::thread aborter([&] {
      std::this_thread::sleep_for(milliseconds(50));  // let the wait go to sleep first
      comm.abort();
    });
    Status st = comm.recv(0, &byte, 1, 1, soon());
    aborter.join();
    auto took = std::chrono::steady_clock::now() - start;
    if (st.code() != StatusCode::kRemote || st.message().find("abort") == std::string::npos)
      return Status::internal("expected kRemote aborted, got " + st.to_string());
    if (took > std::chrono::seconds(5)) return Status::internal("abort took too long");
    return comm.send(0, &byte, 1, 1, soon()).code() == StatusCode::kRemote
               ? Status::OK()
               : Status::internal("a send after abort must fail");
  });
  expect_all_ok(results);
}

INSTANTIATE_TEST_SUITE_P(ShmAndTcp, BuiltinBothTransports, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "shm" : "tcp");
                         });

TEST(BuiltinCommunicator, RejectsBadArguments) {
  LocalStore store;
  EXPECT_EQ(make_builtin_communicator(2, 2, store, test_options(true)).status().code(),
            StatusCode::kInvalidArgument);
  auto comm = make_builtin_communicator(0, 1, store, test_options(true));
  ASSERT_TRUE(comm.ok()) << comm.status().to_string();
  uint8_t b = 0;
  EXPECT_EQ(comm.value()->isend(1, &b, 1, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(comm.value()->irecv(-1, &b, 1, 0).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace builtin_test
}  // namespace collectives
}  // namespace hora
