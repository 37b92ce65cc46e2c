// ReduceOp: how a collective combines the contributions of the ranks. Plain values.
//
// kAverage is kSum followed by a scale of 1/size; the kernels never see kAverage as such
// (kernels::reduce treats it as kSum), the executor applies the scale.
#pragma once

#include <cstdint>
#include <string>

#include "core/base/status.h"

namespace hora {

enum class ReduceOp : uint8_t { kSum = 0, kAverage, kMin, kMax, kProduct };

inline constexpr int kNumReduceOps = 5;

// "sum", "average", "min", "max", "product".
const char* reduce_op_name(ReduceOp op);
// Parses "sum", "avg"/"average"/"mean", "min", "max", "prod"/"product".
StatusOr<ReduceOp> parse_reduce_op(const std::string& name);
StatusOr<ReduceOp> reduce_op_from_int(int value);

}  // namespace hora
