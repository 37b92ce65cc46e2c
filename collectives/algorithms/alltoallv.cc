// Pairwise-exchange alltoallv.
//
// Schedule, n ranks, rank r: the own block is copied locally; then steps s = 1 .. n-1: send
// the block for peer (r + s) mod n and receive the block from peer (r - s) mod n, receive
// posted first, both waited before the next step. Each step pairs every rank with one sender
// and one receiver, so no rank is flooded by n - 1 senders at once and the schedule needs no
// scratch. Zero-length blocks are still exchanged (an empty message) so both sides agree on
// the message sequence without knowing each other's counts.
//
// Determinism: a pure copy.
#include <cstring>
#include <string>

#include "collectives/algorithms/algorithms.h"
#include "collectives/algorithms/ring_common.h"

namespace hora {
namespace collectives {

Status pairwise_alltoallv(Communicator& comm, const void* in,
                          const std::vector<size_t>& send_counts, void* out,
                          const std::vector<size_t>& recv_counts, DataType dtype,
                          const AlgorithmOptions& options) {
  const int n = comm.size();
  const int r = comm.rank();
  if (static_cast<int>(send_counts.size()) != n || static_cast<int>(recv_counts.size()) != n) {
    return Status::invalid_argument("alltoallv on rank " + std::to_string(r) + ": " +
                                    std::to_string(send_counts.size()) + " send_counts and " +
                                    std::to_string(recv_counts.size()) + " recv_counts for " +
                                    std::to_string(n) + " ranks");
  }
  if (send_counts[r] != recv_counts[r]) {
    return Status::mismatch("alltoallv on rank " + std::to_string(r) + ": sends itself " +
                            std::to_string(send_counts[r]) + " elements but expects " +
                            std::to_string(recv_counts[r]));
  }
  const std::vector<size_t> send_offsets = detail::prefix_offsets(send_counts);
  const std::vector<size_t> recv_offsets = detail::prefix_offsets(recv_counts);
  if (send_offsets[n] == 0 && recv_offsets[n] == 0) return Status::OK();
  const size_t elem = data_type_bytes(dtype);
  const auto* in_bytes = static_cast<const uint8_t*>(in);
  auto* out_bytes = static_cast<uint8_t*>(out);
  HORA_RETURN_IF_ERROR(detail::copy_if_distinct(comm, in_bytes + send_offsets[r] * elem,
                                                out_bytes + recv_offsets[r] * elem, send_counts[r],
                                                dtype));
  for (int s = 1; s < n; ++s) {
    const int to = (r + s) % n;
    const int from = (r - s + n) % n;
    HORA_RETURN_IF_ERROR(
        detail::send_recv(comm, to, in_bytes + send_offsets[to] * elem, send_counts[to] * elem,
                          from, out_bytes + recv_offsets[from] * elem, recv_counts[from] * elem,
                          options, "alltoallv", "step", s));
  }
  return detail::finish(comm, options.deadline);
}

}  // namespace collectives
}  // namespace hora
