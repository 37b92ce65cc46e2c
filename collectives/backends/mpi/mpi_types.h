// hora's DataType and ReduceOp mapped to MPI datatypes and ops.
//
// Most dtypes map to MPI's predefined types (MPI_UINT8_T, MPI_INT8_T, MPI_INT16_T,
// MPI_UINT16_T, MPI_INT32_T, MPI_INT64_T, MPI_FLOAT, MPI_DOUBLE, MPI_C_BOOL) and most ops to
// MPI_SUM / MPI_MIN / MPI_MAX / MPI_PROD. Four cases use user-defined ops (MPI_Op_create)
// whose function calls kernels::reduce:
// - float16 and bfloat16: MPI has no standard half-precision types (Open MPI 4.1, Debian's,
//   has neither MPI_FLOAT16 nor a bfloat16 type; MPIX_C_FLOAT16 is not in every build), so
//   they travel as MPI_Type_contiguous(2, MPI_BYTE) and every op on them is a user op that
//   combines in float32 and rounds once, exactly as hora's other backends do.
// - min and max on float32/float64: MPI_MIN/MPI_MAX use `a < b ? a : b`, which drops a NaN
//   depending on its position; hora's contract (kernels.h) is that NaN propagates, so these
//   are user ops too, giving the same results as the builtin and gloo backends.
// - sum (and average) on uint8/int8/int16/uint16: Open MPI 4.1's AVX op component saturates
//   8- and 16-bit sums (open-mpi/ompi#8045); hora's sums wrap, so these are user ops as well.
// - min/max/product on bool: logical and/or reading any non-zero byte as true, where MPI
//   offers only MPI_LAND/MPI_LOR and may combine odd bytes bitwise. Sum and average on bool
//   have no op: callers refuse them first (check_reduce_op).
// kAverage maps to a sum; the caller applies the 1/size scale.
//
// MpiTypes owns the derived types and user ops it created. Create after MPI is initialised,
// destroy before it is finalised. Not thread-safe to create/destroy; lookups are const.
#pragma once

#include <mpi.h>

#include "hora/data_type.h"
#include "hora/reduce_op.h"
#include "hora/status.h"

namespace hora {
namespace collectives {
namespace mpi_backend {

// MPI's own datatype for a hora dtype; MPI_DATATYPE_NULL for float16 and bfloat16, which
// standard MPI lacks. bool is MPI_C_BOOL.
MPI_Datatype standard_datatype(DataType dtype);
// MPI's predefined op (kAverage as MPI_SUM: the caller scales).
MPI_Op standard_op(ReduceOp op);

class MpiTypes {
 public:
  MpiTypes() = default;
  ~MpiTypes();
  MpiTypes(const MpiTypes&) = delete;
  MpiTypes& operator=(const MpiTypes&) = delete;

  // Creates the derived types and user ops. Call once.
  Status init();
  // Frees them (idempotent); called by the destructor unless MPI is already finalised.
  void release();

  MPI_Datatype datatype(DataType dtype) const;
  MPI_Op op(DataType dtype, ReduceOp op) const;

 private:
  bool initialised_ = false;
  MPI_Datatype half_ = MPI_DATATYPE_NULL;  // 2 bytes, for float16 and bfloat16
  // user_ops_[dtype][op]; MPI_OP_NULL where a predefined op is used.
  MPI_Op user_ops_[kNumDataTypes][kNumElementwiseReduceOps];
};

}  // namespace mpi_backend
}  // namespace collectives
}  // namespace hora
