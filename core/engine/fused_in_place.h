// Fused buckets reduced where their tensors lie: the executor's path for an uncompressed fused
// bucket when the communicator has a gather-list allreduce (Communicator::allreduce_spans: the
// builtin backend over shared memory) and the selector picks the native allreduce, and for every
// uncompressed fused bucket at one rank. No fusion buffer: nothing is packed or unpacked.
//
// The bits equal the packed path's (scale_copy(prescale) into the buffer, the native
// allreduce, scale_copy(postscale) out): allreduce_spans promises that, and at one rank the
// result is the input scaled by the prescale and then the postscale, each skipped when 1 (an
// average at one rank with no scale factors leaves an in-place tensor untouched).
// Engine thread only.
#pragma once

#include <vector>

#include "collectives/reduce_span.h"
#include "core/engine/fusion_planner.h"
#include "core/engine/message.h"
#include "core/engine/tensor_queue.h"
#include "hora/data_type.h"

namespace hora {
namespace engine {

// The bucket's tensors as spans, in bucket order: each member's input and output where this
// rank's entry has them, or a zero contribution without output (a rank that has joined and
// lacks the tensor). `entries[i]`: the entry of responses[i] on this rank, or null. Into
// *spans, whose previous contents are dropped (the executor's, reused: no allocation per
// bucket).
void bucket_spans(const std::vector<Response>& responses, const Bucket& bucket,
                  const std::vector<Entry*>& entries, std::vector<collectives::ReduceSpan>* spans);

// One rank's allreduce of `spans`: out = in * prescale * postscale (two roundings, as the
// packed path), zeros for a span without input. REQUIRES: dtype scalable when a factor is not 1.
void local_allreduce_spans(const std::vector<collectives::ReduceSpan>& spans, DataType dtype,
                           double prescale, double postscale);

}  // namespace engine
}  // namespace hora
