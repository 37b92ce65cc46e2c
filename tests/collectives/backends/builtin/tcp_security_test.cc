// Strangers at a rank's TCP port: garbage, or a well-formed hello without the secret, are
// dropped and the job goes on; a rank with another secret is refused.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "collectives/backends/builtin/tcp_transport.h"
#include "tests/collectives/backends/builtin/builtin_test_util.h"

namespace hora {
namespace collectives {
namespace builtin_test {
namespace {

int connect_to(const std::string& address) {
  size_t colon = address.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
  inet_pton(AF_INET, address.substr(0, colon).c_str(), &a.sin_addr);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

// Reads until the peer closes; returns the bytes read (bounded wait).
size_t read_until_closed(int fd) {
  size_t total = 0;
  uint8_t buf[256];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0) return total + 1000000;  // never closed: fail loudly
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return total;
    total += static_cast<size_t>(n);
  }
}

TEST(BuiltinTcpSecurity, StrangersAreDroppedAndTheJobContinues) {
  LocalStore store;
  BuiltinOptions options = test_options(false);
  options.host_id = "test-host";
  // Rank 1 publishes its address once it knows every rank's host: stand in for rank 0's entry.
  ASSERT_TRUE(
      store.set(options.key_prefix + "host/0", Bytes{'t', 'e', 's', 't', '-', 'h', 'o', 's', 't'})
          .ok());
  Status rank1_status;
  std::thread rank1([&] {
    auto comm = make_builtin_communicator(1, 2, store, options);
    if (!comm.ok()) {
      rank1_status = comm.status();
      return;
    }
    uint8_t b = 0;
    rank1_status = comm.value()->recv(0, &b, 1, 1, Deadline::after(std::chrono::seconds(20)));
    if (rank1_status.ok() && b != 42) rank1_status = Status::internal("wrong byte");
  });
  auto addr = store.get(builtin::tcp_address_key(options.key_prefix, 1),
                        Deadline::after(std::chrono::seconds(20)));
  ASSERT_TRUE(addr.ok()) << addr.status().to_string();
  std::string address(addr.value().begin(), addr.value().end());

  // 1: garbage.
  int fd = connect_to(address);
  std::vector<uint8_t> garbage(64, 0x5a);
  ASSERT_EQ(write(fd, garbage.data(), garbage.size()), 64);
  EXPECT_EQ(read_until_closed(fd), 0u) << "garbage must be answered by a close";
  close(fd);

  // 2: a well-formed hello (magic "HRTC", version 1, from 0, to 1, nonce), a wrong proof.
  fd = connect_to(address);
  uint8_t hello[32] = {};
  uint32_t fields[4] = {0x48525443, 1, 0, 1};
  std::memcpy(hello, fields, sizeof fields);
  ASSERT_EQ(write(fd, hello, sizeof hello), 32);
  uint8_t challenge[48];
  size_t got = 0;
  while (got < sizeof challenge) {
    ssize_t n = read(fd, challenge + got, sizeof challenge - got);
    ASSERT_GT(n, 0);
    got += static_cast<size_t>(n);
  }
  uint8_t proof[32] = {1, 2, 3};
  ASSERT_EQ(write(fd, proof, sizeof proof), 32);
  EXPECT_EQ(read_until_closed(fd), 0u) << "a wrong proof must be answered by a close, not an ack";
  close(fd);

  // The real rank 0 joins and the job works.
  auto comm0 = make_builtin_communicator(0, 2, store, options);
  ASSERT_TRUE(comm0.ok()) << comm0.status().to_string();
  uint8_t b = 42;
  EXPECT_TRUE(comm0.value()->send(1, &b, 1, 1, Deadline::after(std::chrono::seconds(20))).ok());
  rank1.join();
  EXPECT_TRUE(rank1_status.ok()) << rank1_status.to_string();
}

TEST(BuiltinTcpSecurity, RankWithAnotherSecretIsRefused) {
  LocalStore store;
  BuiltinOptions good = test_options(false), bad = test_options(false);
  bad.secret = "another-job";
  good.timeout_s = bad.timeout_s = 2;
  Status s0, s1;
  std::thread t1([&] { s1 = make_builtin_communicator(1, 2, store, good).status(); });
  s0 = make_builtin_communicator(0, 2, store, bad).status();
  t1.join();
  EXPECT_EQ(s0.code(), StatusCode::kFailedPrecondition) << s0.to_string();
  EXPECT_NE(s0.message().find("secret"), std::string::npos) << s0.to_string();
  EXPECT_EQ(s1.code(), StatusCode::kTimeout) << s1.to_string();
  EXPECT_NE(s1.message().find("rank(s) 0"), std::string::npos) << s1.to_string();
}

}  // namespace
}  // namespace builtin_test
}  // namespace collectives
}  // namespace hora
