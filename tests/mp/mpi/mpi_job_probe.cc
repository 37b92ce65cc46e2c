// mpi_job_probe: a hora program for jobs under mpirun. It calls hora::init (so the whole start
// path runs: layout from OMPI_COMM_WORLD_*, the mpi backend, the store bootstrapped over MPI),
// runs an allreduce through the job's communicator, checks the closed-form result, prints one
// line per rank and shuts down.
//
// Usage: mpi_job_probe [ok|sigkill|exit3]
//   ok       every rank: "mpi_job_probe: rank R of N (local L of M) backend B: allreduce ok".
//   sigkill  after a first allreduce, the others print "waiting in allreduce without rank V",
//   exit3    tell the last rank V so and enter a second allreduce; V then kills itself with
//            SIGKILL (or exits with status 3 without shutting down). The others must fail
//            (kTimeout/kRemote from the communicator) or be torn down by mpirun: never hang.
// Exit: 0 when every step passed on this rank; 1 on a failed init, collective, check or
// shutdown (the message is printed); 2 on a bad argument; 3 (exit3 mode, the victim).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/context_access.h"
#include "hora/hora.h"

namespace {

int fail(const std::string& what, const hora::Status& status) {
  std::fprintf(stderr, "mpi_job_probe: rank %d: %s: %s\n", hora::rank(), what.c_str(),
               status.to_string().c_str());
  return 1;
}

// One allreduce (float64 sum) of buf[i] = 1000 * rank + i + round, within HORA_TIMEOUT_S.
hora::Status allreduce_once(hora::collectives::Communicator& comm, int round) {
  const int n = comm.size();
  std::vector<double> buf(1031);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = comm.rank() * 1000.0 + i + round;
  const double timeout_s = hora::detail::context()->config().timeout_s;
  hora::Status s = comm.allreduce(buf.data(), buf.data(), buf.size(), hora::DataType::kFloat64,
                                  hora::ReduceOp::kSum, hora::Deadline::after_seconds(timeout_s));
  if (!s.ok()) return s;
  // sum over r of (1000 r + i + round) = 1000 n(n-1)/2 + n (i + round)
  for (size_t i = 0; i < buf.size(); ++i) {
    const double want = 1000.0 * n * (n - 1) / 2 + n * (static_cast<double>(i) + round);
    if (buf[i] != want)
      return hora::Status::internal("allreduce element " + std::to_string(i) + " is " +
                                    std::to_string(buf[i]) + ", expected " + std::to_string(want));
  }
  return hora::Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "ok";
  if (mode != "ok" && mode != "sigkill" && mode != "exit3") {
    std::fprintf(stderr, "mpi_job_probe: mode '%s' is not ok, sigkill or exit3\n", mode.c_str());
    return 2;
  }
  hora::Status status = hora::init();
  if (!status.ok()) return fail("hora::init failed", status);
  // The probe drives the job's communicator itself: park the engine first.
  status = hora::detail::pause_engine(std::chrono::seconds(60));
  if (!status.ok()) return fail("pausing the engine", status);
  hora::collectives::Communicator& comm = hora::detail::context()->communicator();
  status = allreduce_once(comm, 0);
  if (!status.ok()) return fail("allreduce failed", status);
  if (mode == "ok") {
    std::printf("mpi_job_probe: rank %d of %d (local %d of %d) backend %s: allreduce ok\n",
                hora::rank(), hora::size(), hora::local_rank(), hora::local_size(),
                comm.backend_name());
  } else {
    // The victim dies only once every survivor has printed its line and is about to enter
    // the allreduce (each sends it one byte first), so the test sees the point it tests.
    const int victim = comm.size() - 1;
    const hora::Deadline deadline = hora::Deadline::after_seconds(60);
    constexpr uint32_t kTagReady = 7;
    char ready = 1;
    if (comm.rank() == victim) {
      for (int r = 0; r < victim; ++r) {
        status = comm.recv(r, &ready, 1, kTagReady, deadline);
        if (!status.ok()) return fail("waiting for rank " + std::to_string(r), status);
      }
      std::printf("mpi_job_probe: rank %d dies (%s)\n", victim, mode.c_str());
      std::fflush(stdout);
      if (mode == "sigkill") ::kill(::getpid(), SIGKILL);
      std::_Exit(3);
    }
    std::printf("mpi_job_probe: rank %d waiting in allreduce without rank %d\n", comm.rank(),
                victim);
    std::fflush(stdout);
    status = comm.send(victim, &ready, 1, kTagReady, deadline);
    if (!status.ok()) return fail("telling rank " + std::to_string(victim), status);
    status = allreduce_once(comm, 1);
    if (!status.ok()) return fail("allreduce with a dead rank failed (as it should)", status);
    std::printf("mpi_job_probe: rank %d: allreduce with a dead rank returned OK\n", comm.rank());
  }
  std::fflush(stdout);
  status = hora::shutdown();
  if (!status.ok()) return fail("hora::shutdown failed", status);
  return 0;
}
