#include "collectives/backends/mpi/mpi_types.h"

#include "collectives/backends/mpi/mpi_status.h"
#include "kernels/kernels.h"

namespace hora {
namespace collectives {
namespace mpi_backend {
namespace {

// MPI calls user functions as inoutvec[i] = invec[i] op inoutvec[i]; every hora op is
// commutative, so kernels::reduce(inoutvec, invec) is that. `len` counts elements of the
// datatype the collective was called with, which is one hora element for every type here.
template <DataType D, ReduceOp O>
void user_reduce(void* invec, void* inoutvec, int* len, MPI_Datatype*) {
  kernels::reduce(inoutvec, invec, static_cast<size_t>(*len), D, O);
}

using UserFunction = void (*)(void*, void*, int*, MPI_Datatype*);

template <DataType D>
UserFunction user_function(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
      if constexpr (D == DataType::kBool) {
        return nullptr;  // Not defined on bool; never created.
      } else {
        return &user_reduce<D, ReduceOp::kSum>;
      }
    case ReduceOp::kMin: return &user_reduce<D, ReduceOp::kMin>;
    case ReduceOp::kMax: return &user_reduce<D, ReduceOp::kMax>;
    case ReduceOp::kProduct: return &user_reduce<D, ReduceOp::kProduct>;
    case ReduceOp::kAdasum: break;  // not elementwise: no MPI op (check_reduce_op refuses it)
  }
  return nullptr;
}

bool needs_user_op(DataType dtype, ReduceOp op) {
  if (dtype == DataType::kFloat16 || dtype == DataType::kBFloat16) return true;
  if (dtype == DataType::kFloat32 || dtype == DataType::kFloat64)
    return op == ReduceOp::kMin || op == ReduceOp::kMax;
  // Open MPI 4.1's AVX op component adds 8- and 16-bit integers with saturating instructions
  // (255 + 1 = 255; 16384 + 16384 on a short stays 32767), while hora wraps modulo 2^8 / 2^16
  // like C's unsigned arithmetic and every other backend (open-mpi/ompi#8045, closed as
  // wontfix).
  if (dtype == DataType::kUint8 || dtype == DataType::kInt8 || dtype == DataType::kInt16 ||
      dtype == DataType::kUint16)
    return op == ReduceOp::kSum || op == ReduceOp::kAverage;
  // bool: MPI allows only MPI_LAND/MPI_LOR on MPI_C_BOOL, and its C implementation may treat a
  // byte other than 0/1 as a bit pattern (2 && 0x80 done bitwise is 0); the kernels read any
  // non-zero byte as true and write 0/1, as the other backends do. Sum and average are refused
  // before MPI is called (check_reduce_op), so they get no op.
  if (dtype == DataType::kBool) return is_reduce_op_defined(op, dtype);
  return false;
}

UserFunction user_function_for(DataType dtype, ReduceOp op) {
  switch (dtype) {
    case DataType::kUint8: return user_function<DataType::kUint8>(op);
    case DataType::kInt8: return user_function<DataType::kInt8>(op);
    case DataType::kInt16: return user_function<DataType::kInt16>(op);
    case DataType::kUint16: return user_function<DataType::kUint16>(op);
    case DataType::kBool: return user_function<DataType::kBool>(op);
    case DataType::kFloat16: return user_function<DataType::kFloat16>(op);
    case DataType::kBFloat16: return user_function<DataType::kBFloat16>(op);
    case DataType::kFloat32: return user_function<DataType::kFloat32>(op);
    case DataType::kFloat64: return user_function<DataType::kFloat64>(op);
    default: return nullptr;
  }
}

}  // namespace

MpiTypes::~MpiTypes() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) release();
}

Status MpiTypes::init() {
  for (auto& row : user_ops_)
    for (auto& op : row) op = MPI_OP_NULL;
  initialised_ = true;
  HORA_RETURN_IF_ERROR(mpi_status(MPI_Type_contiguous(2, MPI_BYTE, &half_),
                                  "MPI_Type_contiguous(2, MPI_BYTE) for float16/bfloat16"));
  HORA_RETURN_IF_ERROR(mpi_status(MPI_Type_commit(&half_), "MPI_Type_commit (half type)"));
  int bool_bytes = 0;
  HORA_RETURN_IF_ERROR(
      mpi_status(MPI_Type_size(MPI_C_BOOL, &bool_bytes), "MPI_Type_size(MPI_C_BOOL)"));
  if (bool_bytes != 1)
    return Status::unimplemented("mpi: MPI_C_BOOL is " + std::to_string(bool_bytes) +
                                 " bytes in this MPI; hora's bool is 1 byte");
  for (int d = 0; d < kNumDataTypes; ++d) {
    for (int o = 0; o < kNumElementwiseReduceOps; ++o) {
      DataType dtype = static_cast<DataType>(d);
      ReduceOp op = static_cast<ReduceOp>(o);
      if (!needs_user_op(dtype, op)) continue;
      HORA_RETURN_IF_ERROR(mpi_status(
          MPI_Op_create(user_function_for(dtype, op), /*commute=*/1, &user_ops_[d][o]),
          std::string("MPI_Op_create for ") + data_type_name(dtype) + " " + reduce_op_name(op)));
    }
  }
  return Status::OK();
}

void MpiTypes::release() {
  if (!initialised_) return;
  initialised_ = false;
  for (auto& row : user_ops_)
    for (auto& op : row)
      if (op != MPI_OP_NULL) MPI_Op_free(&op);
  if (half_ != MPI_DATATYPE_NULL) MPI_Type_free(&half_);
}

MPI_Datatype standard_datatype(DataType dtype) {
  switch (dtype) {
    case DataType::kUint8: return MPI_UINT8_T;
    case DataType::kInt8: return MPI_INT8_T;
    case DataType::kInt32: return MPI_INT32_T;
    case DataType::kInt64: return MPI_INT64_T;
    case DataType::kFloat32: return MPI_FLOAT;
    case DataType::kFloat64: return MPI_DOUBLE;
    case DataType::kInt16: return MPI_INT16_T;
    case DataType::kUint16: return MPI_UINT16_T;
    case DataType::kBool:
      return MPI_C_BOOL;  // One byte (checked in MpiTypes::init), like hora's bool.
    case DataType::kFloat16:
    case DataType::kBFloat16: break;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op standard_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return MPI_SUM;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kProduct: return MPI_PROD;
    case ReduceOp::kAdasum: break;  // not elementwise: no MPI op (check_reduce_op refuses it)
  }
  return MPI_OP_NULL;
}

MPI_Datatype MpiTypes::datatype(DataType dtype) const {
  if (dtype == DataType::kFloat16 || dtype == DataType::kBFloat16) return half_;
  return standard_datatype(dtype);
}

MPI_Op MpiTypes::op(DataType dtype, ReduceOp op) const {
  if (!is_elementwise_reduce_op(op)) return MPI_OP_NULL;
  MPI_Op user = user_ops_[static_cast<int>(dtype)][static_cast<int>(op)];
  return user != MPI_OP_NULL ? user : standard_op(op);
}

}  // namespace mpi_backend
}  // namespace collectives
}  // namespace hora
