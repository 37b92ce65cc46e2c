// The rank-ordered reduction of the shared-memory collectives (shm_allreduce.cc,
// shm_span_allreduce.cc): every element is reduced as srcs[0] op srcs[1] op ... op srcs[n-1],
// in that order, so whichever rank computes it gets the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "hora/data_type.h"
#include "hora/reduce_op.h"

namespace hora {
namespace collectives {
namespace builtin {

// dst = srcs[0] op srcs[1] op ... op srcs[n-1] for `count` elements, in that order; then
// scaled by `factor` (1: none), with the bits of kernels::reduce then kernels::scale. Writes
// `dst` and, unless null, `dst2`. Two sources (and the last of more) are combined, scaled and
// written in one pass (kernels::reduce3_scaled); more are accumulated through L1-sized blocks
// first. dst and dst2 may alias any source only at the same element position (each block is
// fully read before it is written). `op` must not be kAverage (pass kSum and the factor).
void reduce_sources(const std::vector<const uint8_t*>& srcs, size_t count, DataType dtype,
                    ReduceOp op, double factor, uint8_t* dst, uint8_t* dst2);

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
