// The collectives hora-bench measures and what nccl-tests says about each: how a size on the
// command line maps to an element count, the bus-bandwidth factor, and whether it reduces.
//
// Sizes follow nccl-tests: `size` is the largest buffer of the call in bytes (the full buffer
// of allgather's output, reducescatter's input, alltoall's send buffer); `count` is the count
// nccl-tests prints (allreduce, broadcast: the buffer; allgather: each rank's block;
// reducescatter: each rank's result; alltoall: the elements sent to each peer).
// Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <string>

#include "hora/data_type.h"
#include "hora/reduce_op.h"
#include "hora/status.h"

namespace hora {
namespace bench {

enum class Collective { kAllreduce, kAllgather, kBroadcast, kReducescatter, kAlltoall };

const char* collective_name(Collective collective);
// "allreduce", "allgather", "broadcast", "reducescatter", "alltoall".
StatusOr<Collective> parse_collective(const std::string& text);

// nccl-tests' factors: busbw = algbw x factor. allreduce 2(n-1)/n; allgather, reducescatter
// and alltoall (n-1)/n; broadcast 1. REQUIRES: ranks >= 1.
double busbw_factor(Collective collective, int ranks);

bool is_reduction(Collective collective);
// Whether the collective uses a root (broadcast).
bool has_root(Collective collective);

// The count for a requested size (rounded down to whole elements and, where the buffer is
// split per rank, whole blocks; at least 1 element), and the size that count really moves.
size_t count_for_size(Collective collective, size_t size_bytes, DataType dtype, int ranks);
size_t size_for_count(Collective collective, size_t count, DataType dtype, int ranks);
// Elements of the input and output buffers of one call with `count`.
size_t input_elements(Collective collective, size_t count, int ranks);
size_t output_elements(Collective collective, size_t count, int ranks);

}  // namespace bench
}  // namespace hora
