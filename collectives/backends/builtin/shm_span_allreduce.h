// Gather-list allreduce over a ShmExchange: the builtin communicator's allreduce_spans
// (communicator.h, reduce_span.h) when every rank runs on this host. The engine's fused
// buckets take it: each tensor is read and written where it lies, so a fused step costs what
// one allreduce of its bytes costs, without packing into and unpacking out of a fusion buffer.
//
// Schedule (shm_allreduce.cc's, over the logical vector the spans form, every source in the
// slots): the short path (total <= small_bytes and one slot) copies every span into
// slot(r, step), syncs once and every rank reduces the whole vector from the slots into its
// outs. The large path cuts the vector into slot-sized chunks, each into N slices; per chunk
// rank r copies all but slice r of its spans into its slot, syncs, reduces slice r from every
// rank's slot and its own spans (read in place unless prescaled or zero) into its outs and its
// slot, syncs, and copies every other slice from its owner's slot into its outs. Per chunk a
// rank moves (N-1)/N of it in, the reduce, and (N-1)/N of it out: a packed fused allreduce
// moved the whole chunk in and out on top of that.
//
// Contract: as Communicator::allreduce_spans. Bits: each element is reduced in rank order
// 0..N-1 by one rank (short path: by every rank in that order) and scaled after, exactly as
// shm_allreduce of the packed vector followed by scale_copy(postscale) computes it, so every
// rank holds the same bits. Errors as shm_allreduce; sum and average on bool are refused
// before anything is exchanged. One call at a time (the communicator's thread).
#pragma once

#include <vector>

#include "collectives/backends/builtin/shm_allreduce.h"
#include "collectives/backends/builtin/shm_exchange.h"
#include "collectives/reduce_span.h"
#include "core/base/deadline.h"
#include "hora/data_type.h"
#include "hora/reduce_op.h"
#include "hora/status.h"

namespace hora {
namespace collectives {
namespace builtin {

Status shm_allreduce_spans(ShmExchange& exchange, const std::vector<ReduceSpan>& spans,
                           DataType dtype, ReduceOp op, double prescale, double postscale,
                           Deadline deadline, const ShmCollectiveOptions& options);

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
