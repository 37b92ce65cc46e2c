// Adasum's kernels (Maleki et al., MLSys 2021): the pairwise rule's dot products and norms,
// and the weighted sum it combines two vectors with. Host memory; float16, bfloat16, float32
// and float64 only (the caller refuses other dtypes: is_reduce_op_defined in
// hora/reduce_op.h). The dot products are accumulated in float64 in an order fixed by the
// count (four interleaved partial sums), so a call gives the same bits wherever it runs on one
// CPU kind.
//
// The pairwise rule, for vectors a and b:
//   adasum(a, b) = (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b
// with a coefficient of 1 where its vector's norm is zero (a zero vector then gives the other
// vector unchanged). Orthogonal vectors sum; equal vectors give the vector itself.
#pragma once

#include <cstddef>

#include "hora/data_type.h"

namespace hora {
namespace kernels {

// a.b, |a|^2 and |b|^2, accumulated in float64.
struct AdasumDots {
  double ab = 0;
  double aa = 0;
  double bb = 0;
};

// Adds the dot products of `count` elements of a and b (of `dtype`) to *dots.
void adasum_dots(const void* a, const void* b, size_t count, DataType dtype, AdasumDots* dots);

// The pairwise rule's coefficients of a (*ca) and b (*cb) from the dot products of whole
// vectors.
void adasum_coefficients(const AdasumDots& dots, double* ca, double* cb);

// out[i] = ca * a[i] + cb * b[i], computed in float64 for float64 and in float32 (the
// coefficients rounded to float32) for the other dtypes, rounded to `dtype` once. `out` may be
// `a` or `b`.
void adasum_combine(void* out, const void* a, const void* b, size_t count, DataType dtype,
                    double ca, double cb);

}  // namespace kernels
}  // namespace hora
