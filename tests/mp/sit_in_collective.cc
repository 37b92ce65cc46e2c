// sit_in_collective: initialises hora, prints "sit_in_collective: rank R pid P ready" and then
// blocks in a collective that cannot finish (every rank but 0 in a broadcast from root 0,
// rank 0 in a receive nobody sends) until its 120 s deadline. shm_leak_check.sh kill -9's
// every rank while they sit there.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "core/context.h"
#include "core/context_access.h"
#include "hora/hora.h"

int main() {
  hora::Status status = hora::init();
  if (!status.ok()) {
    std::fprintf(stderr, "sit_in_collective: hora::init failed: %s\n", status.to_string().c_str());
    return 1;
  }
  // The collective below uses the job's communicator directly: park the engine first.
  status = hora::detail::pause_engine(std::chrono::seconds(60));
  if (!status.ok()) {
    std::fprintf(stderr, "sit_in_collective: pausing the engine: %s\n", status.to_string().c_str());
    return 1;
  }
  hora::collectives::Communicator& comm = hora::detail::context()->communicator();
  std::printf("sit_in_collective: rank %d pid %d ready\n", comm.rank(), static_cast<int>(getpid()));
  std::fflush(stdout);
  hora::collectives::AlgorithmOptions options;
  options.deadline = hora::Deadline::after_seconds(120);
  std::vector<float> buf(1 << 20);
  if (comm.rank() == 0 && comm.size() > 1) {
    status = comm.recv(1, buf.data(), 4, /*tag=*/0x51771, options.deadline);
  } else {
    status = hora::collectives::pipelined_broadcast(comm, buf.data(), buf.data(), buf.size(),
                                                    hora::DataType::kFloat32, 0, options);
  }
  std::printf("sit_in_collective: rank %d left the collective: %s\n", comm.rank(),
              status.to_string().c_str());
  return 1;  // never expected: the test kills every rank first
}
