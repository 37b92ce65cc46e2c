// The closed-form inputs and expected outputs of every collective, so each result can be
// checked exactly (nccl-tests' "#wrong"): rank r's input element i is input_value(r, i), a
// small integer exact in every dtype; the expected output of each element follows from the
// formula, never from another rank's data.
//
//   sum, min, max, avg: input_value(r, i) = (i + 2 r) mod 5  (sums stay exact in bfloat16
//                       up to 50 ranks);
//   product:           1, or 2 on the one rank r = i mod ranks (so products are 1 or 2).
//
// Floats are compared with a tolerance of the dtype (an average is the exact sum times
// 1/ranks, rounded); integers exactly; bool holds each value's truth (min / max / product of
// the values is zero exactly when the logical and / or / and is false). Pure functions,
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "benchmarks/hora_bench/collective.h"
#include "hora/data_type.h"
#include "hora/reduce_op.h"

namespace hora {
namespace bench {

struct CheckCall {
  Collective collective = Collective::kAllreduce;
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  size_t count = 0;  // the collective's count (collective.h)
  int rank = 0;
  int ranks = 1;
  int root = 0;
};

double input_value(ReduceOp op, int rank, int ranks, size_t index);

// Writes this rank's input (input_elements(...) elements) into `buf`.
void fill_input(const CheckCall& call, void* buf);

// Compares this rank's output (output_elements(...) elements) with the closed form; returns
// the number of wrong elements.
int64_t count_wrong(const CheckCall& call, const void* out);

}  // namespace bench
}  // namespace hora
