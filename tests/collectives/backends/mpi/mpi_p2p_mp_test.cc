// Point-to-point over the MPI communicator: every rank runs every test (under mpirun -np N).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "tests/collectives/backends/mpi/mpi_test_util.h"

namespace hora {
namespace collectives {
namespace mpi_test {
namespace {

using ::testing::HasSubstr;

// The byte a sender `from` puts at index i of a message of `bytes` bytes.
uint8_t pattern(int from, size_t bytes, size_t i) {
  return static_cast<uint8_t>(from * 31 + bytes * 7 + i * 13);
}

std::vector<uint8_t> message(int from, size_t bytes) {
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = pattern(from, bytes, i);
  return data;
}

using MpiP2pTest = MpiTest;

TEST_F(MpiP2pTest, RingExchangeIncludingZeroBytes) {
  const int next = (rank_ + 1) % size_;
  const int prev = (rank_ + size_ - 1) % size_;
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{4096}, size_t{1} << 20}) {
    auto out = message(rank_, bytes);
    std::vector<uint8_t> in(bytes, 0);
    auto send = comm_->isend(next, out.data(), bytes, 7);
    ASSERT_TRUE(send.ok()) << send.status().to_string();
    Status received = comm_->recv(prev, in.data(), bytes, 7, test_deadline());
    ASSERT_TRUE(received.ok()) << received.to_string();
    ASSERT_TRUE((*send)->wait(test_deadline()).ok());
    EXPECT_EQ(in, message(prev, bytes)) << bytes << " bytes from rank " << prev;
  }
}

TEST_F(MpiP2pTest, SameTagKeepsOrderAcrossTags) {
  const int next = (rank_ + 1) % size_;
  const int prev = (rank_ + size_ - 1) % size_;
  // Interleave tag 1 and tag 2 messages; receive all of tag 2 first, then tag 1.
  const int32_t values[5] = {10, 20, 11, 21, 12};
  const uint32_t tags[5] = {1, 2, 1, 2, 1};
  std::vector<std::unique_ptr<Request>> sends;
  for (int k = 0; k < 5; ++k) {
    auto send = comm_->isend(next, &values[k], sizeof(int32_t), tags[k]);
    ASSERT_TRUE(send.ok()) << send.status().to_string();
    sends.push_back(std::move(send).value());
  }
  int32_t got[5] = {0, 0, 0, 0, 0};
  ASSERT_TRUE(comm_->recv(prev, &got[0], 4, 2, test_deadline()).ok());
  ASSERT_TRUE(comm_->recv(prev, &got[1], 4, 2, test_deadline()).ok());
  ASSERT_TRUE(comm_->recv(prev, &got[2], 4, 1, test_deadline()).ok());
  ASSERT_TRUE(comm_->recv(prev, &got[3], 4, 1, test_deadline()).ok());
  ASSERT_TRUE(comm_->recv(prev, &got[4], 4, 1, test_deadline()).ok());
  for (auto& send : sends) ASSERT_TRUE(send->wait(test_deadline()).ok());
  EXPECT_EQ(got[0], 20);
  EXPECT_EQ(got[1], 21);
  EXPECT_EQ(got[2], 10);
  EXPECT_EQ(got[3], 11);
  EXPECT_EQ(got[4], 12);
}

TEST_F(MpiP2pTest, OverlappedIsendIrecvWithEveryPeer) {
  const size_t bytes = 64 * 1024 + 3;
  std::vector<std::vector<uint8_t>> in(size_, std::vector<uint8_t>(bytes, 0));
  std::vector<uint8_t> out = message(rank_, bytes);
  std::vector<std::unique_ptr<Request>> requests;
  for (int p = 0; p < size_; ++p) {
    auto recv = comm_->irecv(p, in[p].data(), bytes, 3);
    ASSERT_TRUE(recv.ok()) << recv.status().to_string();
    requests.push_back(std::move(recv).value());
  }
  for (int p = 0; p < size_; ++p) {
    auto send = comm_->isend(p, out.data(), bytes, 3);
    ASSERT_TRUE(send.ok()) << send.status().to_string();
    requests.push_back(std::move(send).value());
  }
  for (auto it = requests.rbegin(); it != requests.rend(); ++it) {
    Status done = (*it)->wait(test_deadline());
    ASSERT_TRUE(done.ok()) << done.to_string();
  }
  for (int p = 0; p < size_; ++p) EXPECT_EQ(in[p], message(p, bytes)) << "from rank " << p;
}

TEST_F(MpiP2pTest, RecvDeadlineExpiresNamingPeerThenCommStillWorks) {
  const int next = (rank_ + 1) % size_;
  const int prev = (rank_ + size_ - 1) % size_;
  int64_t value = -1;
  auto recv = comm_->irecv(prev, &value, sizeof(value), 99);
  ASSERT_TRUE(recv.ok());
  Status first = (*recv)->wait(Deadline::after(std::chrono::milliseconds(200)));
  EXPECT_EQ(first.code(), StatusCode::kTimeout) << first.to_string();
  EXPECT_THAT(first.message(), HasSubstr("recv from rank " + std::to_string(prev)));
  EXPECT_THAT(first.message(), HasSubstr("tag 99"));
  EXPECT_EQ((*recv)->wait(test_deadline()), first);  // the same Status again
  ASSERT_TRUE(comm_->barrier(test_deadline()).ok());
  // The timed-out recv was cancelled, so it does not steal the next message on that tag.
  int64_t out = 1000 + rank_;
  auto send = comm_->isend(next, &out, sizeof(out), 99);
  ASSERT_TRUE(send.ok());
  int64_t in = -1;
  ASSERT_TRUE(comm_->recv(prev, &in, sizeof(in), 99, test_deadline()).ok());
  ASSERT_TRUE((*send)->wait(test_deadline()).ok());
  EXPECT_EQ(in, 1000 + prev);
}

TEST_F(MpiP2pTest, ByteCountMismatchIsAnErrorNamingPeerAndSizes) {
  const int next = (rank_ + 1) % size_;
  const int prev = (rank_ + size_ - 1) % size_;
  std::vector<uint8_t> out(16, 1), in(32, 0);
  // Longer than expected: MPI_ERR_TRUNCATE.
  auto send = comm_->isend(next, out.data(), 16, 5);
  ASSERT_TRUE(send.ok());
  Status longer = comm_->recv(prev, in.data(), 8, 5, test_deadline());
  EXPECT_EQ(longer.code(), StatusCode::kMismatch) << longer.to_string();
  EXPECT_THAT(longer.message(), HasSubstr("rank " + std::to_string(prev)));
  EXPECT_THAT(longer.message(), HasSubstr("8 bytes"));
  ASSERT_TRUE((*send)->wait(test_deadline()).ok());
  // Shorter than expected: caught by the count check.
  send = comm_->isend(next, out.data(), 16, 6);
  ASSERT_TRUE(send.ok());
  Status shorter = comm_->recv(prev, in.data(), 32, 6, test_deadline());
  EXPECT_EQ(shorter.code(), StatusCode::kMismatch) << shorter.to_string();
  EXPECT_THAT(shorter.message(), HasSubstr("sent 16 bytes, 32 were expected"));
  ASSERT_TRUE((*send)->wait(test_deadline()).ok());
}

TEST_F(MpiP2pTest, MessagesAboveTheCountLimitTravelAsOneMessage) {
  MpiOptions options;
  options.max_count_per_call = 1000;  // messages above 1000 bytes use the derived type
  create(options);
  const int next = (rank_ + 1) % size_;
  const int prev = (rank_ + size_ - 1) % size_;
  for (size_t bytes : {size_t{1000}, size_t{2500}, size_t{3000}}) {
    auto out = message(rank_, bytes);
    std::vector<uint8_t> in(bytes, 0);
    auto send = comm_->isend(next, out.data(), bytes, 8);
    ASSERT_TRUE(send.ok()) << send.status().to_string();
    Status received = comm_->recv(prev, in.data(), bytes, 8, test_deadline());
    ASSERT_TRUE(received.ok()) << received.to_string();
    ASSERT_TRUE((*send)->wait(test_deadline()).ok());
    EXPECT_EQ(in, message(prev, bytes)) << bytes;
  }
  // The size check still holds: 2500 sent, 3000 expected.
  auto out = message(rank_, 2500);
  std::vector<uint8_t> in(3000, 0);
  auto send = comm_->isend(next, out.data(), 2500, 9);
  ASSERT_TRUE(send.ok());
  Status shorter = comm_->recv(prev, in.data(), 3000, 9, test_deadline());
  EXPECT_EQ(shorter.code(), StatusCode::kMismatch) << shorter.to_string();
  EXPECT_THAT(shorter.message(), HasSubstr("sent 2500 bytes, 3000 were expected"));
  ASSERT_TRUE((*send)->wait(test_deadline()).ok());
}

TEST_F(MpiP2pTest, AbortFailsPendingAndLaterWaits) {
  const int prev = (rank_ + size_ - 1) % size_;
  int64_t value = 0;
  auto recv = comm_->irecv(prev, &value, sizeof(value), 77);  // never sent
  ASSERT_TRUE(recv.ok());
  std::thread aborter([this] { comm_->abort(); });
  Status waited = (*recv)->wait(test_deadline());
  aborter.join();
  EXPECT_EQ(waited.code(), StatusCode::kRemote) << waited.to_string();
  EXPECT_THAT(waited.message(), HasSubstr("aborted"));
  auto later = comm_->irecv(prev, &value, sizeof(value), 78);
  EXPECT_EQ(later.status().code(), StatusCode::kRemote);
  EXPECT_EQ(comm_->barrier(test_deadline()).code(), StatusCode::kRemote);
}

TEST_F(MpiP2pTest, BadPeerIsInvalidArgument) {
  int32_t value = 0;
  auto bad_peer = comm_->isend(size_, &value, sizeof(value), 1);
  EXPECT_EQ(bad_peer.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_peer.status().message(), HasSubstr("peer " + std::to_string(size_)));
  auto negative_peer = comm_->irecv(-1, &value, sizeof(value), 1);
  EXPECT_EQ(negative_peer.status().code(), StatusCode::kInvalidArgument);
}

// Tags on both sides of MPI_TAG_UB (2^31 - 1 in Open MPI) up to 2^32 - 1: each is its own
// channel. Received in reverse order of sending, so a tag that aliased another (tag and
// tag - 2^31 on one MPI tag) would receive the wrong value.
TEST_F(MpiP2pTest, EveryUint32TagIsItsOwnChannel) {
  const int next = (rank_ + 1) % size_;
  const int prev = (rank_ + size_ - 1) % size_;
  const uint32_t tags[6] = {0u, 1u, 0x7FFFFFFFu, 0x80000000u, 0x80000001u, 0xFFFFFFFFu};
  int32_t values[6];
  std::vector<std::unique_ptr<Request>> sends;
  for (int k = 0; k < 6; ++k) {
    values[k] = rank_ * 100 + k;
    auto send = comm_->isend(next, &values[k], sizeof(int32_t), tags[k]);
    ASSERT_TRUE(send.ok()) << "tag " << tags[k] << ": " << send.status().to_string();
    sends.push_back(std::move(send).value());
  }
  for (int k = 5; k >= 0; --k) {
    int32_t got = -1;
    Status s = comm_->recv(prev, &got, sizeof(got), tags[k], test_deadline());
    ASSERT_TRUE(s.ok()) << "tag " << tags[k] << ": " << s.to_string();
    EXPECT_EQ(got, prev * 100 + k) << "tag " << tags[k];
  }
  for (auto& send : sends) ASSERT_TRUE(send->wait(test_deadline()).ok());
}

}  // namespace
}  // namespace mpi_test
}  // namespace collectives
}  // namespace hora
