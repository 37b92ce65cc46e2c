// transport_probe: ping-pong latency and 16-256 MiB uni/bidirectional bandwidth of the builtin
// transports between 2 forked ranks on this host. Not a test; prints a table.
//   builtin_transport_probe [shm|tcp|both]
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/backends/builtin/builtin_communicator.h"
#include "tests/collectives/backends/builtin/test_stores.h"

using namespace hora;
using namespace hora::collectives;
using Clock = std::chrono::steady_clock;

namespace {

Deadline later() { return Deadline::after(std::chrono::seconds(120)); }
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

Status run(int rank, Store& store, bool shm) {
  BuiltinOptions o;
  o.shm_enabled = shm;
  o.secret = "probe";
  HORA_ASSIGN_OR_RETURN(auto comm, make_builtin_communicator(rank, 2, store, o));
  const int peer = 1 - rank;
  const char* kind = shm ? "shm" : "tcp";
  // Ping-pong.
  uint8_t small[8] = {};
  const int iters = shm ? 200000 : 20000;
  for (int phase = 0; phase < 2; ++phase) {
    int n = phase == 0 ? iters / 10 : iters;
    auto t = Clock::now();
    for (int i = 0; i < n; ++i) {
      if (rank == 0) {
        HORA_RETURN_IF_ERROR(comm->send(peer, small, 8, 1, later()));
        HORA_RETURN_IF_ERROR(comm->recv(peer, small, 8, 1, later()));
      } else {
        HORA_RETURN_IF_ERROR(comm->recv(peer, small, 8, 1, later()));
        HORA_RETURN_IF_ERROR(comm->send(peer, small, 8, 1, later()));
      }
    }
    if (phase == 1 && rank == 0)
      std::printf("%s  ping-pong 8 B: %.2f us one-way (%.2f us round trip)\n", kind,
                  since(t) / n / 2 * 1e6, since(t) / n * 1e6);
  }
  for (size_t mib : {16, 64, 256}) {
    const size_t bytes = mib << 20;
    std::vector<uint8_t> out(bytes, 1), in(bytes, 0);
    const int reps = mib == 256 ? 3 : 6;
    // Unidirectional: 0 -> 1, then a 1-byte ack.
    double uni = 0, bi = 0;
    for (int phase = 0; phase < 2; ++phase) {
      int n = phase == 0 ? 1 : reps;
      auto t = Clock::now();
      for (int i = 0; i < n; ++i) {
        if (rank == 0)
          HORA_RETURN_IF_ERROR(comm->send(peer, out.data(), bytes, 2, later()));
        else
          HORA_RETURN_IF_ERROR(comm->recv(peer, in.data(), bytes, 2, later()));
      }
      if (rank == 1)
        HORA_RETURN_IF_ERROR(comm->send(peer, small, 1, 3, later()));
      else
        HORA_RETURN_IF_ERROR(comm->recv(peer, small, 1, 3, later()));
      uni = bytes * double(n) / since(t) / 1e9;
    }
    for (int phase = 0; phase < 2; ++phase) {
      int n = phase == 0 ? 1 : reps;
      auto t = Clock::now();
      for (int i = 0; i < n; ++i) {
        HORA_ASSIGN_OR_RETURN(auto r, comm->irecv(peer, in.data(), bytes, 4));
        HORA_ASSIGN_OR_RETURN(auto s, comm->isend(peer, out.data(), bytes, 4));
        HORA_RETURN_IF_ERROR(r->wait(later()));
        HORA_RETURN_IF_ERROR(s->wait(later()));
      }
      bi = bytes * double(n) / since(t) / 1e9;
    }
    if (rank == 0)
      std::printf("%s  %3zu MiB: uni %.2f GB/s, bidir %.2f GB/s each way (%.2f total)\n", kind, mib,
                  uni, bi, 2 * bi);
  }
  return Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  std::string which = argc > 1 ? argv[1] : "both";
  int rc = 0;
  for (bool shm : {true, false}) {
    if ((shm && which == "tcp") || (!shm && which == "shm")) continue;
    char tmpl[] = "/tmp/hora-probe-XXXXXX";
    std::string dir = mkdtemp(tmpl);
    pid_t pids[2];
    for (int r = 0; r < 2; ++r) {
      pids[r] = fork();
      if (pids[r] == 0) {
        builtin_test::DirStore store(dir);
        Status st = run(r, store, shm);
        if (!st.ok()) std::fprintf(stderr, "rank %d: %s\n", r, st.to_string().c_str());
        std::fflush(stdout);
        _exit(st.ok() ? 0 : 1);
      }
    }
    for (pid_t p : pids) {
      int status = 0;
      waitpid(p, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
    }
    std::system(("rm -rf " + dir).c_str());
  }
  return rc;
}
