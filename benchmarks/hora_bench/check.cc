// Closed-form inputs and expected outputs (see check.h).
#include "benchmarks/hora_bench/check.h"

#include <cmath>
#include <cstring>

#include "kernels/kernels.h"

namespace hora {
namespace bench {
namespace {

double load(const void* buf, DataType dtype, size_t i) {
  switch (dtype) {
    case DataType::kUint8: return static_cast<const uint8_t*>(buf)[i];
    case DataType::kInt8: return static_cast<const int8_t*>(buf)[i];
    case DataType::kInt32: return static_cast<const int32_t*>(buf)[i];
    case DataType::kInt64: return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case DataType::kFloat16: return kernels::f16_to_f32(static_cast<const uint16_t*>(buf)[i]);
    case DataType::kBFloat16: return kernels::bf16_to_f32(static_cast<const uint16_t*>(buf)[i]);
    case DataType::kFloat32: return static_cast<const float*>(buf)[i];
    case DataType::kFloat64: return static_cast<const double*>(buf)[i];
    case DataType::kInt16: return static_cast<const int16_t*>(buf)[i];
    case DataType::kUint16: return static_cast<const uint16_t*>(buf)[i];
    case DataType::kBool: return static_cast<const uint8_t*>(buf)[i];
  }
  return 0;
}

void store(void* buf, DataType dtype, size_t i, double v) {
  switch (dtype) {
    case DataType::kUint8: static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(v); break;
    case DataType::kInt8: static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(v); break;
    case DataType::kInt32: static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v); break;
    case DataType::kInt64: static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v); break;
    case DataType::kFloat16:
      static_cast<uint16_t*>(buf)[i] = kernels::f32_to_f16(static_cast<float>(v));
      break;
    case DataType::kBFloat16:
      static_cast<uint16_t*>(buf)[i] = kernels::f32_to_bf16(static_cast<float>(v));
      break;
    case DataType::kFloat32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    case DataType::kFloat64: static_cast<double*>(buf)[i] = v; break;
    case DataType::kInt16: static_cast<int16_t*>(buf)[i] = static_cast<int16_t>(v); break;
    case DataType::kUint16: static_cast<uint16_t*>(buf)[i] = static_cast<uint16_t>(v); break;
    case DataType::kBool: static_cast<uint8_t*>(buf)[i] = v != 0 ? 1 : 0; break;
  }
}

double tolerance(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16:
    case DataType::kBFloat16: return 1e-2;
    case DataType::kFloat32: return 1e-5;
    case DataType::kFloat64: return 1e-12;
    default: return 0;
  }
}

// The reduction over every rank of element `index`.
double reduced_value(ReduceOp op, int ranks, size_t index) {
  double acc = input_value(op, 0, ranks, index);
  for (int r = 1; r < ranks; ++r) {
    const double v = input_value(op, r, ranks, index);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAverage: acc += v; break;
      case ReduceOp::kMin: acc = std::fmin(acc, v); break;
      case ReduceOp::kMax: acc = std::fmax(acc, v); break;
      case ReduceOp::kProduct: acc *= v; break;
      case ReduceOp::kAdasum: break;  // refused by the options (adasum_bench measures it)
    }
  }
  return op == ReduceOp::kAverage ? acc / ranks : acc;
}

// The expected value of output element `i` of `call` on its rank.
double expected_value(const CheckCall& c, size_t i) {
  switch (c.collective) {
    case Collective::kAllreduce: return reduced_value(c.op, c.ranks, i);
    case Collective::kReducescatter:
      return reduced_value(c.op, c.ranks, static_cast<size_t>(c.rank) * c.count + i);
    case Collective::kBroadcast: return input_value(c.op, c.root, c.ranks, i);
    case Collective::kAllgather:
      return input_value(c.op, static_cast<int>(i / c.count), c.ranks, i % c.count);
    case Collective::kAlltoall: {
      // Block q of the output came from rank q: its elements rank*count + j of q's input.
      const int from = static_cast<int>(i / c.count);
      return input_value(c.op, from, c.ranks, static_cast<size_t>(c.rank) * c.count + i % c.count);
    }
  }
  return 0;
}

}  // namespace

double input_value(ReduceOp op, int rank, int ranks, size_t index) {
  if (op == ReduceOp::kProduct) {
    return static_cast<int>(index % static_cast<size_t>(ranks)) == rank ? 2.0 : 1.0;
  }
  return static_cast<double>((index + 2 * static_cast<size_t>(rank)) % 5);
}

void fill_input(const CheckCall& c, void* buf) {
  const size_t n = input_elements(c.collective, c.count, c.ranks);
  for (size_t i = 0; i < n; ++i) store(buf, c.dtype, i, input_value(c.op, c.rank, c.ranks, i));
}

int64_t count_wrong(const CheckCall& c, const void* out) {
  const size_t n = output_elements(c.collective, c.count, c.ranks);
  const double tol = tolerance(c.dtype);
  int64_t wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    double want = expected_value(c, i);
    // bool holds the truth of each value; min / max / product of the values is zero exactly
    // when the logical and / or / and of their truths is false.
    if (c.dtype == DataType::kBool) want = want != 0 ? 1 : 0;
    const double got = load(out, c.dtype, i);
    if (!(std::fabs(got - want) <= tol * std::fmax(1.0, std::fabs(want)))) ++wrong;
  }
  return wrong;
}

}  // namespace bench
}  // namespace hora
