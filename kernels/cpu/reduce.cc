// reduce / reduce3 / reduce3_scaled: the entry points, forwarding to the active ISA's table.
#include "hora/logging.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/kernels.h"

namespace hora {
namespace kernels {

namespace {

// The table's indices of `dtype` and `op`, checked.
struct Cell {
  int dt;
  int op;
};

Cell cell_of(DataType dtype, ReduceOp op) {
  const int dt = static_cast<int>(dtype);
  const int op_index = static_cast<int>(op);
  HORA_CHECK(dt >= 0 && dt < kNumDataTypes) << "dtype " << dt;
  HORA_CHECK(op_index >= 0 && op_index < kNumElementwiseReduceOps) << "op " << op_index;
  return {dt, op_index};
}

// Aborts naming op and dtype where the table has no kernel for them.
void check_defined(bool defined, DataType dtype, ReduceOp op) {
  HORA_CHECK(defined) << "reduce op " << reduce_op_name(op) << " is not defined for "
                      << data_type_name(dtype) << "; the caller must refuse it (check_reduce_op)";
}

}  // namespace

void reduce3(void* dst, const void* a, const void* b, size_t count, DataType dtype, ReduceOp op) {
  const Cell c = cell_of(dtype, op);
  const detail::BinaryFn fn = detail::active_table().binary[c.dt][c.op];
  check_defined(fn != nullptr, dtype, op);
  if (count == 0) return;
  fn(dst, a, b, count);
}

void reduce3_scaled(void* dst, void* dst2, const void* a, const void* b, size_t count,
                    DataType dtype, ReduceOp op, double factor) {
  const Cell c = cell_of(dtype, op);
  const detail::BinaryOutFn fn = detail::active_table().binary_out[c.dt][c.op];
  check_defined(fn != nullptr, dtype, op);
  if (count == 0) return;
  if (factor == 1.0 || dtype == DataType::kFloat32 || dtype == DataType::kFloat64) {
    fn(dst, dst2, a, b, count, factor);
    return;
  }
  // The combined value rounded to the dtype first, as reduce3 stores it, then scaled.
  fn(dst, nullptr, a, b, count, 1.0);
  scale(dst, count, dtype, factor);
  if (dst2 != nullptr) copy(dst2, dst, count * data_type_bytes(dtype));
}

void reduce(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op) {
  reduce3(dst, dst, src, count, dtype, op);
}

}  // namespace kernels
}  // namespace hora
