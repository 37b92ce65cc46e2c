#include "hora/reduce_op.h"

namespace hora {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kAverage: return "average";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kProduct: return "product";
  }
  return "unknown";
}

StatusOr<ReduceOp> parse_reduce_op(const std::string& name) {
  if (name == "sum") return ReduceOp::kSum;
  if (name == "avg" || name == "average" || name == "mean") return ReduceOp::kAverage;
  if (name == "min") return ReduceOp::kMin;
  if (name == "max") return ReduceOp::kMax;
  if (name == "prod" || name == "product") return ReduceOp::kProduct;
  return Status::invalid_argument("unknown reduce op '" + name +
                                  "': expected one of sum, average, min, max, product");
}

StatusOr<ReduceOp> reduce_op_from_int(int value) {
  if (value < 0 || value >= kNumReduceOps)
    return Status::invalid_argument("reduce op code " + std::to_string(value) +
                                    " is out of range: expected 0.." +
                                    std::to_string(kNumReduceOps - 1));
  return static_cast<ReduceOp>(value);
}

Status reduce_op_undefined(ReduceOp op, DataType dtype, const char* what) {
  return Status::invalid_argument(std::string(what) + " op " + reduce_op_name(op) +
                                  " is not defined for " + data_type_name(dtype) +
                                  "; use min (logical and) or max (logical or)");
}

bool is_scale_defined(DataType dtype, double factor) {
  return dtype != DataType::kBool || factor == 1.0;
}

}  // namespace hora
