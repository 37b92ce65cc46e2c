#include "hora/reduce_op.h"

#include "core/base/name_table.h"

namespace hora {
namespace {

constexpr const char* kReduceOpNames[] = {"sum", "average", "min", "max", "product", "adasum"};
static_assert(std::size(kReduceOpNames) == kNumReduceOps);
constexpr NameAlias<ReduceOp> kReduceOpAliases[] = {
    {"avg", ReduceOp::kAverage}, {"mean", ReduceOp::kAverage}, {"prod", ReduceOp::kProduct}};

}  // namespace

const char* reduce_op_name(ReduceOp op) { return name_of(kReduceOpNames, op); }

StatusOr<ReduceOp> parse_reduce_op(const std::string& name) {
  if (auto op = find_name(kReduceOpNames, kReduceOpAliases, name)) return *op;
  return Status::invalid_argument("unknown reduce op '" + name +
                                  "': expected one of sum, average, min, max, product, adasum");
}

StatusOr<ReduceOp> reduce_op_from_int(int value) {
  if (value < 0 || value >= kNumReduceOps)
    return Status::invalid_argument("reduce op code " + std::to_string(value) +
                                    " is out of range: expected 0.." +
                                    std::to_string(kNumReduceOps - 1));
  return static_cast<ReduceOp>(value);
}

Status reduce_op_undefined(ReduceOp op, DataType dtype, const char* what) {
  if (op == ReduceOp::kAdasum && is_reduce_op_defined(op, dtype))
    return Status::invalid_argument(std::string(what) +
                                    " op adasum is not an elementwise reduction: only an "
                                    "allreduce (or grouped allreduce) takes it");
  if (op == ReduceOp::kAdasum)
    return Status::invalid_argument(std::string(what) + " op adasum is not defined for " +
                                    data_type_name(dtype) +
                                    ": adasum takes float16, bfloat16, float32 or float64");
  return Status::invalid_argument(std::string(what) + " op " + reduce_op_name(op) +
                                  " is not defined for " + data_type_name(dtype) +
                                  "; use min (logical and) or max (logical or)");
}

bool is_scale_defined(DataType dtype, double factor) {
  return dtype != DataType::kBool || factor == 1.0;
}

}  // namespace hora
