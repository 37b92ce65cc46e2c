// The frame header parser (including a bounded fuzz loop) and the engine's handling of a
// corrupted or oversized header arriving on a TCP stream.
#include "collectives/backends/builtin/frame.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <random>

#include "collectives/backends/builtin/peer_engine.h"
#include "collectives/backends/builtin/tcp_transport.h"

namespace hora {
namespace collectives {
namespace builtin {
namespace {

TEST(FrameHeader, RoundTrips) {
  for (uint64_t bytes : {uint64_t{0}, uint64_t{1}, uint64_t{4096}, uint64_t{1} << 33}) {
    uint8_t buf[kFrameHeaderBytes];
    encode_frame_header(FrameHeader{42, bytes}, buf);
    auto h = parse_frame_header(buf, uint64_t{1} << 40, 3);
    ASSERT_TRUE(h.ok()) << h.status().to_string();
    EXPECT_EQ(h.value().tag, 42u);
    EXPECT_EQ(h.value().bytes, bytes);
  }
}

TEST(FrameHeader, OversizedIsRejectedNamingThePeer) {
  uint8_t buf[kFrameHeaderBytes];
  encode_frame_header(FrameHeader{1, 1000}, buf);
  auto h = parse_frame_header(buf, 999, 4);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kIo);
  EXPECT_NE(h.status().message().find("rank 4"), std::string::npos) << h.status().to_string();
  EXPECT_NE(h.status().message().find("exceeds"), std::string::npos);
}

// Bounded fuzz: random headers are rejected, and every single-bit flip of a valid header is.
TEST(FrameHeader, FuzzRandomBytesAndBitFlips) {
  std::mt19937_64 rng(12345);
  int accepted = 0;
  for (int i = 0; i < 200000; ++i) {
    uint8_t buf[kFrameHeaderBytes];
    for (auto& b : buf) b = static_cast<uint8_t>(rng());
    if (i % 2 == 1) std::memcpy(buf, &kFrameMagic, 4);  // get past the magic half the time
    auto h = parse_frame_header(buf, uint64_t{1} << 40, 0);
    if (h.ok())
      ++accepted;
    else
      EXPECT_NE(h.status().message().find("rank 0"), std::string::npos);
  }
  EXPECT_EQ(accepted, 0);
  for (int i = 0; i < 2000; ++i) {
    uint8_t buf[kFrameHeaderBytes];
    encode_frame_header(FrameHeader{static_cast<uint32_t>(rng()), rng() >> 30}, buf);
    int bit = static_cast<int>(rng() % (kFrameHeaderBytes * 8));
    buf[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    EXPECT_FALSE(parse_frame_header(buf, uint64_t{1} << 40, 0).ok()) << "bit " << bit;
  }
}

// An engine reading from a socket whose other end writes `garbage`.
Status recv_after_garbage(const std::vector<uint8_t>& garbage, uint64_t max_bytes) {
  int fds[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
  PeerEngine engine(0, 7, std::make_unique<TcpLink>(fds[0], 7), max_bytes);
  EXPECT_EQ(write(fds[1], garbage.data(), garbage.size()), static_cast<ssize_t>(garbage.size()));
  close(fds[1]);
  std::vector<uint8_t> dst(64);
  auto op = std::make_shared<Op>();
  op->peer = 7;
  op->tag = 1;
  op->dst = dst.data();
  op->bytes = dst.size();
  engine.post_recv(op);
  for (int i = 0; i < 100 && !op->complete; ++i) engine.progress(true);
  EXPECT_TRUE(op->complete);
  // A later operation fails at once with the same error: the connection is over.
  auto later = std::make_shared<Op>();
  later->bytes = 0;
  engine.post_recv(later);
  EXPECT_TRUE(later->complete);
  EXPECT_EQ(later->status, op->status);
  return op->status;
}

TEST(FrameOnTcp, CorruptedHeaderEndsTheConnectionNamingThePeer) {
  std::vector<uint8_t> garbage(64, 0xab);
  Status st = recv_after_garbage(garbage, 1 << 20);
  EXPECT_EQ(st.code(), StatusCode::kIo);
  EXPECT_NE(st.message().find("corrupted frame header from rank 7"), std::string::npos)
      << st.to_string();
}

TEST(FrameOnTcp, OversizedHeaderEndsTheConnection) {
  std::vector<uint8_t> frame(kFrameHeaderBytes);
  encode_frame_header(FrameHeader{1, uint64_t{1} << 41}, frame.data());
  Status st = recv_after_garbage(frame, uint64_t{1} << 40);
  EXPECT_EQ(st.code(), StatusCode::kIo);
  EXPECT_NE(st.message().find("exceeds"), std::string::npos) << st.to_string();
}

TEST(FrameOnTcp, ClosedConnectionIsRemoteNamingThePeer) {
  Status st = recv_after_garbage({}, 1 << 20);
  EXPECT_EQ(st.code(), StatusCode::kRemote);
  EXPECT_NE(st.message().find("rank 7"), std::string::npos) << st.to_string();
}

}  // namespace
}  // namespace builtin
}  // namespace collectives
}  // namespace hora
