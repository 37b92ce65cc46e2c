// Dissemination barrier (Hensgen, Finkel & Manber).
//
// Schedule, n ranks, rank r: rounds k = 0 .. ceil(log2 n) - 1 with distance d = 2^k: send a
// one-byte token to (r + d) mod n, receive one from (r - d) mod n, wait both. After round k a
// rank has heard, directly or through others, from the 2^(k+1) - 1 ranks before it, so after
// the last round every rank knows every other rank has entered. Any rank count, no root, and
// every rank does the same ceil(log2 n) rounds.
#include <string>

#include "collectives/algorithms/algorithms.h"
#include "collectives/algorithms/ring_common.h"

namespace hora {
namespace collectives {

Status dissemination_barrier(Communicator& comm, const AlgorithmOptions& options) {
  const int n = comm.size();
  const int r = comm.rank();
  int round = 0;
  for (int distance = 1; distance < n; distance <<= 1, ++round) {
    const int to = (r + distance) % n;
    const int from = (r - distance + n) % n;
    const uint8_t token = static_cast<uint8_t>(round);
    uint8_t received = 0;
    HORA_RETURN_IF_ERROR(detail::send_recv(comm, to, &token, 1, from, &received, 1, options,
                                           "barrier", "round", round));
    if (received != token) {
      return Status::mismatch("barrier on rank " + std::to_string(r) + ": rank " +
                              std::to_string(from) + " sent token " + std::to_string(received) +
                              " in round " + std::to_string(round) +
                              " (another collective on the same tag?)");
    }
  }
  return Status::OK();
}

}  // namespace collectives
}  // namespace hora
