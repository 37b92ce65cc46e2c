// ReduceSpan: one tensor of a gather-list allreduce (Communicator::allreduce_spans).
//
// A rank's spans, in order, form one logical vector: the concatenation of their `count`
// elements. Every rank passes spans whose counts sum to the same total (the split into spans
// may differ between ranks; the engine's is the same everywhere), and the allreduce reduces
// that logical vector elementwise as one allreduce of the total would, writing each span's part
// of the result to its `out`.
#pragma once

#include <cstddef>

namespace hora {
namespace collectives {

struct ReduceSpan {
  // `count` elements of this rank's contribution; null: zeros (a rank that has joined).
  const void* in = nullptr;
  // Where this span's `count` elements of the result go; null: discarded. May equal `in`
  // (in place); any other overlap with any span's memory is undefined.
  void* out = nullptr;
  size_t count = 0;  // elements; 0 is allowed
};

}  // namespace collectives
}  // namespace hora
