#include "kernels/cpu/cpu_blas.h"

#include <algorithm>

#ifdef ATTNSCOPE_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace attnscope::cpu {

#ifdef ATTNSCOPE_HAVE_OPENBLAS

void sgemm(bool transpose_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
           float beta, float* c, int ldc) {
  if (m <= 0 || n <= 0) return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb,
              beta, c, ldc);
}

void setBlasThreads(int threads) {
  // openblas_set_num_threads touches the library's global thread pool; calling it only when the
  // number changes keeps it off the hot path.
  if (openblas_get_num_threads() != threads) openblas_set_num_threads(std::max(1, threads));
}

std::string blasDescription() {
  std::string config = openblas_get_config();
  return "OpenBLAS (" + config + "; " + openblas_get_corename() + " kernels in use)";
}

#else

void sgemm(bool transpose_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
           float beta, float* c, int ldc) {
  for (int i = 0; i < m; ++i) {
    float* crow = c + static_cast<long>(i) * ldc;
    for (int j = 0; j < n; ++j) crow[j] = beta == 0.0f ? 0.0f : beta * crow[j];
    const float* arow = a + static_cast<long>(i) * lda;
    if (transpose_b) {
      for (int j = 0; j < n; ++j) {
        const float* brow = b + static_cast<long>(j) * ldb;
        float acc = 0;
        for (int p = 0; p < k; ++p) acc += arow[p] * brow[p];
        crow[j] += alpha * acc;
      }
    } else {
      for (int p = 0; p < k; ++p) {
        const float av = alpha * arow[p];
        const float* brow = b + static_cast<long>(p) * ldb;
        for (int j = 0; j < n; ++j) crow[j] += av * brow[j];
      }
    }
  }
}

void setBlasThreads(int) {}

std::string blasDescription() { return "none (plain C++ loops; install OpenBLAS for speed)"; }

#endif

}  // namespace attnscope::cpu
