// ReduceOp: how a collective combines the contributions of the ranks. Plain values.
//
// kAverage is kSum followed by a scale of 1/size; the kernels never see kAverage as such
// (kernels::reduce treats it as kSum), the executor applies the scale.
//
// kAdasum (Maleki et al., "Scaling Distributed Training with Adaptive Summation", MLSys 2021)
// is not elementwise: it combines whole tensors by their dot products and norms, per tensor,
// and is defined for allreduce (and grouped allreduce) of float16, bfloat16, float32 and
// float64 only. Only hora's Adasum allreduce computes it (collectives/algorithms/adasum.cc);
// every elementwise implementation (kernels, backends' native collectives, the other
// algorithms) refuses it through check_reduce_op.
//
// Every elementwise op is defined on every numeric dtype. On bool, min is logical and, max logical
// or and product logical and; sum and average (and scaling by any factor but 1) are not defined,
// and every entry point that reduces refuses them with check_reduce_op.
#pragma once

#include <cstdint>
#include <string>

#include "hora/data_type.h"
#include "hora/status.h"

namespace hora {

enum class ReduceOp : uint8_t { kSum = 0, kAverage, kMin, kMax, kProduct, kAdasum };

inline constexpr int kNumReduceOps = 6;
// The elementwise ops are the first five (kSum .. kProduct): the kernels' and the MPI op
// tables' size.
inline constexpr int kNumElementwiseReduceOps = 5;
inline constexpr bool is_elementwise_reduce_op(ReduceOp op) { return op != ReduceOp::kAdasum; }

// "sum", "average", "min", "max", "product", "adasum".
const char* reduce_op_name(ReduceOp op);
// Parses "sum", "avg"/"average"/"mean", "min", "max", "prod"/"product", "adasum".
StatusOr<ReduceOp> parse_reduce_op(const std::string& name);
StatusOr<ReduceOp> reduce_op_from_int(int value);

// False for sum and average on bool, and for adasum on anything but float16, bfloat16,
// float32 and float64.
inline bool is_reduce_op_defined(ReduceOp op, DataType dtype) {
  if (op == ReduceOp::kAdasum)
    return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 ||
           dtype == DataType::kFloat32 || dtype == DataType::kFloat64;
  return dtype != DataType::kBool || (op != ReduceOp::kSum && op != ReduceOp::kAverage);
}
// check_reduce_op's error: kInvalidArgument "<what> op sum is not defined for bool; use min
// (logical and) or max (logical or)"; "<what> op adasum is not defined for int32: adasum
// takes float16, bfloat16, float32 or float64"; for adasum on a float, "<what> op adasum is
// not an elementwise reduction: only an allreduce (or grouped allreduce) takes it".
Status reduce_op_undefined(ReduceOp op, DataType dtype, const char* what);
// The elementwise implementations' check: OK when the op is elementwise and
// is_reduce_op_defined(op, dtype); otherwise reduce_op_undefined's error. `what` names the
// caller's collective ("allreduce", "tensor 'x': reducescatter", "gloo allreduce").
// Inline, and a literal names the collective: a call that passes (every allreduce checks, at
// each layer it goes through) costs a compare, not a call and a std::string.
inline Status check_reduce_op(ReduceOp op, DataType dtype, const char* what) {
  if (is_elementwise_reduce_op(op) && is_reduce_op_defined(op, dtype)) return Status::OK();
  return reduce_op_undefined(op, dtype, what);
}
inline Status check_reduce_op(ReduceOp op, DataType dtype, const std::string& what) {
  return check_reduce_op(op, dtype, what.c_str());
}
// False only for bool with a factor other than 1 (scaling has no meaning on truth values).
bool is_scale_defined(DataType dtype, double factor);

}  // namespace hora
