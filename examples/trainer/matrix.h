// Matrix: the reference trainer's dense float32 tensor, row-major [rows, cols], owning its
// storage; and gemm, the one matrix product every layer uses (OpenBLAS's cblas_sgemm where
// the build found it, plain loops otherwise).
//
// Plain values; distinct objects may be used from different threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hora {
namespace trainer {

struct Matrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<float> data;

  Matrix() = default;
  Matrix(int64_t rows_in, int64_t cols_in)
      : rows(rows_in), cols(cols_in), data(rows_in * cols_in) {}

  int64_t count() const { return rows * cols; }
  float* row(int64_t r) { return data.data() + r * cols; }
  const float* row(int64_t r) const { return data.data() + r * cols; }
  float& at(int64_t r, int64_t c) { return data[r * cols + c]; }
  float at(int64_t r, int64_t c) const { return data[r * cols + c]; }
  // Reshapes to [rows, cols], reusing the storage (it only grows); contents are unspecified.
  void resize(int64_t rows_in, int64_t cols_in);
  void fill(float value);
  // "[rows,cols]".
  std::string shape_string() const;
};

enum class Transpose { kNo, kYes };

// c = alpha * op(a) * op(b) + beta * c, where op(a) is [m, k], op(b) is [k, n] and c is
// [m, n] (all row-major, contiguous). REQUIRES: the shapes agree (checked, a bug otherwise).
void gemm(Transpose trans_a, Transpose trans_b, float alpha, const Matrix& a, const Matrix& b,
          float beta, Matrix& c);

// Sets the BLAS library's thread count (OpenBLAS; a no-op for the loop fallback). The
// trainer uses one thread per rank by default so ranks on one host do not oversubscribe it.
void set_blas_threads(int threads);
// "openblas 0.3.21 ..." or "loops (no BLAS found at build time)".
std::string blas_name();

}  // namespace trainer
}  // namespace hora
