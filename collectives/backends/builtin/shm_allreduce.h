// Single-copy collectives over a ShmExchange: the builtin communicator's native allreduce,
// broadcast, allgatherv and reducescatter when every rank runs on this host. Peers reduce straight
// from each other's exchange memory instead of passing the data around a ring of FIFOs; see the
// schedule in shm_allreduce.cc.
//
// Contract (as a backend library's native collective, like MPI_Allreduce):
// - Counts are elements; in place when in == out; any other overlap is undefined.
// - kAverage: summed, then scaled by 1/size before the result is distributed (the caller
//   must not scale again); the selector's run_allreduce passes kSum and scales itself.
// - Deterministic: each element is reduced in rank order 0, 1, ..., size-1 by exactly one
//   rank (or, on the small path, by every rank in that same order), so every rank holds
//   bitwise identical results and a repeated run gives the same bits.
// - Single copy: when `in` lies wholly inside this rank's shared region
//   (Communicator::shared_buffer), peers read it there and its copy-in is skipped; when
//   moreover out == in, peers also copy this rank's reduced slice straight from there (one
//   more sync point at the end of the call). `in` must stay unchanged until the call returns
//   (it does: the call blocks).
// - Errors: the exchange's (kTimeout naming the ranks not arrived, kRemote naming a dead or
//   failed peer, or after abort). After an error the exchange stays failed.
// - Every rank must call the same collectives in the same order with the same count, dtype,
//   op and root. One call at a time (the communicator's thread).
// - Sum and average on bool are refused with kInvalidArgument before anything is exchanged
//   (check_reduce_op), on every rank alike.
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/backends/builtin/shm_exchange.h"
#include "core/base/deadline.h"
#include "hora/data_type.h"
#include "hora/reduce_op.h"
#include "hora/status.h"

namespace hora {
namespace collectives {
namespace builtin {

struct ShmCollectiveOptions {
  // Messages up to this many bytes (and at most one slot) take the short path: one sync
  // point, every rank reduces the whole message itself.
  size_t small_bytes = 16 * 1024;
};

Status shm_allreduce(ShmExchange& exchange, const void* in, void* out, size_t count, DataType dtype,
                     ReduceOp op, Deadline deadline, const ShmCollectiveOptions& options);

// Root's `buf` into every rank's `buf`, one sync point per slot-sized chunk.
Status shm_broadcast(ShmExchange& exchange, void* buf, size_t count, DataType dtype, int root,
                     Deadline deadline);

// Communicator::allgatherv (rank r's counts[r] elements into block r of every rank's `out`);
// in place when in == out + offset of block r.
Status shm_allgatherv(ShmExchange& exchange, const void* in, void* out,
                      const std::vector<size_t>& counts, DataType dtype, Deadline deadline);

// Communicator::reducescatter (rank r gets block r of the reduction); in place when
// out == in + offset of block r. kAverage as allreduce.
Status shm_reducescatter(ShmExchange& exchange, const void* in, void* out,
                         const std::vector<size_t>& recv_counts, DataType dtype, ReduceOp op,
                         Deadline deadline);

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
