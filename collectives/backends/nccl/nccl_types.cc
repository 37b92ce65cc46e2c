#include "collectives/backends/nccl/nccl_types.h"

#include <string>

namespace hora {
namespace collectives {
namespace nccl_backend {

StatusOr<ncclDataType_t> nccl_reduce_type(DataType dtype) {
  switch (dtype) {
    case DataType::kUint8: return ncclUint8;
    case DataType::kInt8: return ncclInt8;
    case DataType::kInt32: return ncclInt32;
    case DataType::kInt64: return ncclInt64;
    case DataType::kFloat16: return ncclFloat16;
    case DataType::kBFloat16: return ncclBfloat16;
    case DataType::kFloat32: return ncclFloat32;
    case DataType::kFloat64: return ncclFloat64;
    default: break;
  }
  return Status::unimplemented(std::string("nccl: NCCL cannot reduce ") + data_type_name(dtype) +
                               " natively; use one of hora's algorithms "
                               "(HORA_ALLREDUCE_ALGO=ring|tree|rd), which reduce it on the GPU");
}

ncclRedOp_t nccl_reduce_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMin: return ncclMin;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kProduct: return ncclProd;
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
    case ReduceOp::kAdasum: break;  // refused before (check_reduce_op): not elementwise
  }
  return ncclSum;
}

}  // namespace nccl_backend
}  // namespace collectives
}  // namespace hora
