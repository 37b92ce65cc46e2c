// Matrix storage helpers and gemm through cblas_sgemm (or plain loops without OpenBLAS).
#include "examples/trainer/matrix.h"

#include <algorithm>

#include "hora/logging.h"

#if HORA_TRAINER_HAVE_OPENBLAS
#include <cblas.h>
extern "C" char* openblas_get_config(void);
#endif

namespace hora {
namespace trainer {

void Matrix::resize(int64_t rows_in, int64_t cols_in) {
  rows = rows_in;
  cols = cols_in;
  if (static_cast<int64_t>(data.size()) < rows * cols) data.resize(rows * cols);
}

void Matrix::fill(float value) { std::fill(data.begin(), data.begin() + count(), value); }

std::string Matrix::shape_string() const {
  return "[" + std::to_string(rows) + "," + std::to_string(cols) + "]";
}

void gemm(Transpose trans_a, Transpose trans_b, float alpha, const Matrix& a, const Matrix& b,
          float beta, Matrix& c) {
  const bool ta = trans_a == Transpose::kYes, tb = trans_b == Transpose::kYes;
  const int64_t m = ta ? a.cols : a.rows, k = ta ? a.rows : a.cols;
  const int64_t kb = tb ? b.cols : b.rows, n = tb ? b.rows : b.cols;
  HORA_CHECK_EQ(k, kb);
  HORA_CHECK_EQ(c.rows, m);
  HORA_CHECK_EQ(c.cols, n);
  if (m == 0 || n == 0) return;
#if HORA_TRAINER_HAVE_OPENBLAS
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a.data.data(),
              static_cast<int>(a.cols), b.data.data(), static_cast<int>(b.cols), beta,
              c.data.data(), static_cast<int>(c.cols));
#else
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int64_t p = 0; p < k; ++p) {
        const float av = ta ? a.at(p, i) : a.at(i, p);
        const float bv = tb ? b.at(j, p) : b.at(p, j);
        sum += av * bv;
      }
      c.at(i, j) = alpha * sum + (beta == 0.0f ? 0.0f : beta * c.at(i, j));
    }
  }
#endif
}

void set_blas_threads(int threads) {
#if HORA_TRAINER_HAVE_OPENBLAS
  openblas_set_num_threads(threads);
#else
  (void)threads;
#endif
}

std::string blas_name() {
#if HORA_TRAINER_HAVE_OPENBLAS
  return std::string("OpenBLAS (") + openblas_get_config() + ")";
#else
  return "loops (no BLAS found at build time)";
#endif
}

}  // namespace trainer
}  // namespace hora
