// Recursive doubling allreduce: log2(p) exchange rounds of the whole buffer, for small
// messages where the latency of the 2 (n - 1) ring steps dominates. Any rank count.
//
// Schedule, n ranks, p = the largest power of two <= n, extra = n - p:
//   1. Fold in: for r < 2 * extra, even r sends its input to r + 1 and sits out; odd r
//      computes out = in_{r-1} op in_r (lower rank first). The p remaining ranks get new ids:
//      id = r / 2 for odd r < 2 * extra, id = r - extra for r >= 2 * extra.
//   2. Rounds k = 0 .. log2(p) - 1: partner id = id ^ (1 << k); both exchange their whole
//      current value (the partner's lands in a scratch slot) and both compute
//      out = lower op higher, the operand of the smaller id first.
//   3. kAverage: every rank scales out by 1/n (identical inputs, identical bits).
//   4. Fold out: odd r < 2 * extra sends the result to r - 1, which receives it into out.
//
// Determinism: after round k every rank of a group of 2^(k+1) ids holds the same bits,
// because both partners apply the same operation to the same operands in the same order
// (lower op higher, never "mine op theirs"); the fold uses the same rule. The order of each
// element's reduction is fixed by the rank count alone.
//
// Cost: log2(p) (+2 when n is not a power of two) messages of the whole buffer: best below a
// few KiB, worst for large buffers (each rank moves log2(p) times the buffer); the selector
// keeps it to small messages.
#include <string>

#include "collectives/algorithms/algorithms.h"
#include "collectives/algorithms/ring_common.h"

namespace hora {
namespace collectives {
namespace {

std::string where(const char* phase, int round, int peer) {
  return std::string(" [recursive doubling ") + phase + " round " + std::to_string(round) +
         ", peer rank " + std::to_string(peer) + "]";
}

// Posts the receive first, then the send, then waits both: safe with rendezvous transports.
Status exchange(Communicator& comm, int peer, const void* send_buf, void* recv_buf, size_t bytes,
                const AlgorithmOptions& options) {
  HORA_ASSIGN_OR_RETURN(auto recv, comm.irecv(peer, recv_buf, bytes, options.tag));
  HORA_ASSIGN_OR_RETURN(auto send, comm.isend(peer, send_buf, bytes, options.tag));
  Status recv_status = recv->wait(options.deadline);
  Status send_status = send->wait(options.deadline);
  return recv_status.ok() ? send_status : recv_status;
}

Status rd_schedule(Communicator& comm, const void* in, void* out, size_t count, DataType dtype,
                   ReduceOp op, const AlgorithmOptions& options, ScratchPool& pool) {
  const int n = comm.size();
  const int r = comm.rank();
  const size_t bytes = count * data_type_bytes(dtype);
  HORA_ASSIGN_OR_RETURN(uint8_t * other, detail::acquire(comm, pool, 0, bytes));

  int p = 1;
  while (p * 2 <= n) p *= 2;
  const int extra = n - p;

  // 1. Fold in.
  const void* current = in;  // this rank's running value
  int id = -1;
  if (r < 2 * extra) {
    if (r % 2 == 0) {
      Status status = comm.send(r + 1, in, bytes, options.tag, options.deadline);
      if (!status.ok()) return status.with_context(where("fold-in", 0, r + 1));
    } else {
      Status status = comm.recv(r - 1, other, bytes, options.tag, options.deadline);
      if (!status.ok()) return status.with_context(where("fold-in", 0, r - 1));
      // lower rank first
      HORA_RETURN_IF_ERROR(detail::reduce3(comm, out, other, in, count, dtype, op));
      current = out;
      id = r / 2;
    }
  } else {
    id = r - extra;
  }
  auto rank_of = [&](int peer_id) { return peer_id < extra ? 2 * peer_id + 1 : peer_id + extra; };

  // 2. Rounds.
  if (id >= 0) {
    int round = 0;
    for (int mask = 1; mask < p; mask <<= 1, ++round) {
      const int peer_id = id ^ mask;
      const int peer = rank_of(peer_id);
      Status status = exchange(comm, peer, current, other, bytes, options);
      if (!status.ok()) return status.with_context(where("exchange", round, peer));
      status = id < peer_id ? detail::reduce3(comm, out, current, other, count, dtype, op)
                            : detail::reduce3(comm, out, other, current, count, dtype, op);
      if (!status.ok()) return status.with_context(where("exchange", round, peer));
      current = out;
    }
    // 3. Average (p >= 2 here, so out holds the result).
    if (op == ReduceOp::kAverage)
      HORA_RETURN_IF_ERROR(detail::scale(comm, out, count, dtype, 1.0 / n));
  }

  // 4. Fold out.
  if (r < 2 * extra) {
    if (r % 2 == 1) {
      Status status = comm.send(r - 1, out, bytes, options.tag, options.deadline);
      if (!status.ok()) return status.with_context(where("fold-out", 0, r - 1));
    } else {
      Status status = comm.recv(r + 1, out, bytes, options.tag, options.deadline);
      if (!status.ok()) return status.with_context(where("fold-out", 0, r + 1));
    }
  }
  return Status::OK();
}

}  // namespace

Status recursive_doubling_allreduce(Communicator& comm, const void* in, void* out, size_t count,
                                    DataType dtype, ReduceOp op, const AlgorithmOptions& options) {
  return detail::run_allreduce<rd_schedule>(comm, in, out, count, dtype, op, options,
                                            "recursive doubling allreduce");
}

}  // namespace collectives
}  // namespace hora
