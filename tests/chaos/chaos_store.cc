// chaos_store: the job's rendezvous store in a process of its own, so that a chaos driver can
// kill or stop it after start-up (store_fault_check.sh). Serves on 127.0.0.1, a port the OS
// picks, with the secret given; prints "chaos_store: pid P port N" and serves until killed
// (or for 300 s at most).
// Usage: chaos_store SECRET
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "collectives/rendezvous/tcp_store_server.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: chaos_store SECRET\n");
    return 2;
  }
  hora::collectives::TcpStoreServer::Options options;
  options.secret = argv[1];
  auto server = hora::collectives::TcpStoreServer::start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "chaos_store: %s\n", server.status().to_string().c_str());
    return 1;
  }
  std::printf("chaos_store: pid %d port %d\n", static_cast<int>(getpid()), server.value()->port());
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::seconds(300));
  return 0;
}
