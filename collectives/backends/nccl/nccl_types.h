// hora's dtypes and ops in NCCL's terms. Pure functions; thread-safe.
//
// Reductions use NCCL's own types: uint8, int8, int32, int64, float16, bfloat16, float32,
// float64. NCCL has no int16, uint16 or bool, so native reductions of those are
// kUnimplemented (hora's own algorithms reduce them with the CUDA kernels); collectives that
// only move bytes (broadcast, allgatherv, alltoallv, send/recv) carry every dtype as bytes.
// Ops: sum, min, max, product map to NCCL's; kAverage runs as ncclSum and the communicator
// then scales by 1/size with the CUDA scale kernel, the same rule (and, for integers, the
// same rounding) as every other backend, rather than ncclAvg's.
#pragma once

#include <nccl.h>

#include "hora/data_type.h"
#include "hora/reduce_op.h"
#include "hora/status.h"

namespace hora {
namespace collectives {
namespace nccl_backend {

// NCCL's type for reducing `dtype`; kUnimplemented naming the dtype for int16, uint16, bool.
StatusOr<ncclDataType_t> nccl_reduce_type(DataType dtype);
// NCCL's op for `op` (kAverage -> ncclSum; the caller scales).
ncclRedOp_t nccl_reduce_op(ReduceOp op);

}  // namespace nccl_backend
}  // namespace collectives
}  // namespace hora
