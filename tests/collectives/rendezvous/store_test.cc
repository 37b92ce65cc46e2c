// Tests of the stores: MemoryStore, PrefixStore, and TcpStoreServer/TcpStoreClient over
// loopback, including authentication and malformed input.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "collectives/rendezvous/file_store.h"
#include "collectives/rendezvous/memory_store.h"
#include "collectives/rendezvous/prefix_store.h"
#include "collectives/rendezvous/store_protocol.h"
#include "collectives/rendezvous/tcp_store_client.h"
#include "collectives/rendezvous/tcp_store_server.h"

namespace hora {
namespace collectives {
namespace {

using std::chrono::milliseconds;

Bytes b(const std::string& s) { return Bytes(s.begin(), s.end()); }

std::unique_ptr<TcpStoreServer> start_server(const std::string& secret = "s3cret") {
  TcpStoreServer::Options options;
  options.secret = secret;
  options.max_frame_bytes = 1 << 20;
  auto server = TcpStoreServer::start(options);
  EXPECT_TRUE(server.ok()) << server.status().to_string();
  return std::move(server).value();
}

std::unique_ptr<TcpStoreClient> connect_to(const TcpStoreServer& server,
                                           const std::string& secret = "s3cret") {
  auto c = TcpStoreClient::connect("127.0.0.1", server.port(), secret,
                                   Deadline::after(milliseconds(5000)));
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return std::move(c).value();
}

// A raw TCP connection to the server, for misbehaving clients.
int raw_connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  return fd;
}

// True when the server closes `fd` within the deadline (reads until EOF).
bool closed_by_server(int fd, Deadline deadline) {
  uint8_t buf[4096];
  while (!deadline.expired()) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(deadline.remaining().count())) <= 0) return false;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return true;
  }
  return false;
}

// `writer` sets the key another thread's get waits for: a second client for the TCP store,
// since one client serialises its requests on one connection.
void exercise(Store& store, Store* writer = nullptr) {
  if (writer == nullptr) writer = &store;
  ASSERT_TRUE(store.set("a", b("1")).ok());
  EXPECT_EQ(store.get("a", Deadline::after(milliseconds(1000))).value(), b("1"));
  EXPECT_TRUE(store.check({"a"}).value());
  EXPECT_FALSE(store.check({"a", "b"}).value());
  EXPECT_EQ(store.add("n", 5).value(), 5);
  EXPECT_EQ(store.add("n", -2).value(), 3);
  ASSERT_TRUE(store.set("t", b("text")).ok());
  EXPECT_EQ(store.add("t", 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(store.remove("a").value());
  EXPECT_FALSE(store.remove("a").value());
  auto late = store.get("missing-key", Deadline::after(milliseconds(150)));
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), StatusCode::kTimeout);
  EXPECT_NE(late.status().message().find("missing-key"), std::string::npos);
  Status w = store.wait({"n", "absent1"}, Deadline::after(milliseconds(150)));
  EXPECT_EQ(w.code(), StatusCode::kTimeout);
  EXPECT_NE(w.message().find("absent1"), std::string::npos);
  EXPECT_EQ(w.message().find("'n'"), std::string::npos) << "present keys are not named";
  // A get waits for a set from another thread.
  std::thread setter([&] {
    std::this_thread::sleep_for(milliseconds(20));  // usually lands after the get is parked
    (void)writer->set("later", b("x"));
  });
  EXPECT_EQ(store.get("later", Deadline::after(milliseconds(5000))).value(), b("x"));
  setter.join();
}

TEST(MemoryStoreTest, Basics) {
  MemoryStore store;
  exercise(store);
}

TEST(FileStoreTest, BasicsAndConcurrentAdds) {
  char dir[] = "/tmp/hora_file_store_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  auto store = FileStore::open(std::string(dir) + "/store").value();
  exercise(*store);
  ASSERT_TRUE(store->set("odd key/with:chars", b("v")).ok());
  EXPECT_EQ(store->get("odd key/with:chars", Deadline::after(milliseconds(100))).value(), b("v"));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      auto own = FileStore::open(std::string(dir) + "/store").value();
      for (int i = 0; i < 25; ++i) (void)own->add("c", 1);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(store->add("c", 0).value(), 100);
  EXPECT_FALSE(FileStore::open("").ok());
  EXPECT_EQ(FileStore::open("/proc/hora-cannot-be-here").status().code(), StatusCode::kIo);
  std::string cleanup = std::string("rm -rf ") + dir;
  ASSERT_EQ(std::system(cleanup.c_str()), 0);
}

TEST(PrefixStoreTest, ScopesKeys) {
  MemoryStore base;
  PrefixStore p1("job1", base), p2("job2/", base);
  exercise(p1);
  ASSERT_TRUE(p2.set("k", b("2")).ok());
  ASSERT_TRUE(p1.set("k", b("1")).ok());
  EXPECT_EQ(base.get("job1/k", Deadline::after(milliseconds(100))).value(), b("1"));
  EXPECT_EQ(base.get("job2/k", Deadline::after(milliseconds(100))).value(), b("2"));
}

TEST(TcpStoreTest, Basics) {
  auto server = start_server();
  auto client = connect_to(*server);
  auto writer = connect_to(*server);
  exercise(*client, writer.get());
}

TEST(TcpStoreTest, ConcurrentAddsFromManyClients) {
  auto server = start_server();
  constexpr int kClients = 40, kAdds = 50;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < kClients; ++i)
    threads.emplace_back([&] {
      auto c = TcpStoreClient::connect("127.0.0.1", server->port(), "s3cret",
                                       Deadline::after(milliseconds(10000)));
      if (!c.ok()) return (void)++failures;
      for (int j = 0; j < kAdds; ++j)
        if (!c.value()->add("counter", 1).ok()) ++failures;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(connect_to(*server)->add("counter", 0).value(), kClients * kAdds);
}

TEST(TcpStoreTest, ManyConnectionsAtOnce) {
  auto server = start_server();
  std::vector<std::unique_ptr<TcpStoreClient>> clients;
  for (int i = 0; i < 200; ++i) clients.push_back(connect_to(*server));
  for (size_t i = 0; i < clients.size(); ++i)
    ASSERT_TRUE(clients[i]->set("k" + std::to_string(i), b("v")).ok());
  EXPECT_TRUE(clients[0]->check({"k0", "k199"}).value());
}

TEST(TcpStoreTest, WrongSecretIsRefused) {
  auto server = start_server();
  auto good = connect_to(*server);
  ASSERT_TRUE(good->set("secret-data", b("x")).ok());
  auto bad = TcpStoreClient::connect("127.0.0.1", server->port(), "guess",
                                     Deadline::after(milliseconds(3000)));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(bad.status().message().find("refused authentication"), std::string::npos);
  EXPECT_TRUE(good->check({"secret-data"}).value()) << "others keep working";
}

TEST(TcpStoreTest, RequestWithoutAuthenticationIsDroppedAndLearnsNothing) {
  auto server = start_server();
  auto good = connect_to(*server);
  ASSERT_TRUE(good->set("k", b("private")).ok());
  int fd = raw_connect(server->port());
  StoreRequest get;
  get.type = RequestType::kGet;
  get.keys = {"k"};
  Bytes frame;
  append_frame(encode_request(get), &frame);
  ASSERT_GT(::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL), 0);
  // Whatever comes back before the close is only the challenge nonce, never the value.
  Bytes received;
  uint8_t buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) received.insert(received.end(), buf, buf + n);
  ::close(fd);
  EXPECT_EQ(received.size(), kFrameHeaderBytes + 32);
  const Bytes value = b("private");
  EXPECT_EQ(std::search(received.begin(), received.end(), value.begin(), value.end()),
            received.end());
  EXPECT_TRUE(good->check({"k"}).value());
}

TEST(TcpStoreTest, OversizedFrameAndGarbageCloseOnlyThatConnection) {
  auto server = start_server();
  auto good = connect_to(*server);
  for (const Bytes& junk : {Bytes{0xff, 0xff, 0xff, 0x7f, 1, 2, 3}, Bytes(100, 0xAB)}) {
    int fd = raw_connect(server->port());
    ASSERT_GT(::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL), 0);
    EXPECT_TRUE(closed_by_server(fd, Deadline::after(milliseconds(3000))));
    ::close(fd);
  }
  EXPECT_TRUE(good->set("still", b("ok")).ok());
}

TEST(TcpStoreTest, ClientDyingMidFrameDoesNotDisturbOthers) {
  auto server = start_server();
  auto good = connect_to(*server);
  int fd = raw_connect(server->port());
  const uint8_t half[] = {40, 0, 0, 0, 1, 2};
  ASSERT_GT(::send(fd, half, sizeof(half), MSG_NOSIGNAL), 0);
  ::close(fd);
  std::thread waiter(
      [&] { EXPECT_TRUE(good->wait({"w"}, Deadline::after(milliseconds(5000))).ok()); });
  auto other = connect_to(*server);
  ASSERT_TRUE(other->set("w", b("1")).ok());
  waiter.join();
}

TEST(TcpStoreTest, ServerStopFailsAWaitingClientBeforeItsDeadline) {
  auto server = start_server();
  auto client = connect_to(*server);
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(100));  // let the wait reach the server
    server->stop();
  });
  const auto start = std::chrono::steady_clock::now();
  auto r = client->get("never", Deadline::after(milliseconds(20000)));
  stopper.join();
  EXPECT_FALSE(r.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(TcpStoreTest, ConnectRetriesUntilTheServerStarts) {
  // Find a free port, then start the server on it after the client began connecting.
  auto probe = start_server();
  const int port = probe->port();
  probe->stop();
  probe.reset();
  std::unique_ptr<TcpStoreServer> late;
  std::thread starter([&] {
    std::this_thread::sleep_for(milliseconds(200));
    TcpStoreServer::Options o;
    o.secret = "s3cret";
    o.port = port;
    late = TcpStoreServer::start(o).value();
  });
  auto c =
      TcpStoreClient::connect("127.0.0.1", port, "s3cret", Deadline::after(milliseconds(10000)));
  starter.join();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE(c.value()->set("x", b("y")).ok());
}

TEST(TcpStoreTest, UnreachableStoreTimesOutNamingIt) {
  auto probe = start_server();
  const int port = probe->port();
  probe.reset();
  auto c = TcpStoreClient::connect("127.0.0.1", port, "s", Deadline::after(milliseconds(300)));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kTimeout);
  EXPECT_NE(c.status().message().find("127.0.0.1:" + std::to_string(port)), std::string::npos);
}

TEST(TcpStoreTest, BadServerOptions) {
  TcpStoreServer::Options o;
  EXPECT_EQ(TcpStoreServer::start(o).status().code(), StatusCode::kInvalidArgument);
  o.secret = "x";
  o.bind_address = "not-an-ip";
  EXPECT_EQ(TcpStoreServer::start(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace collectives
}  // namespace hora
