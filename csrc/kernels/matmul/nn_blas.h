// Private helper for the nn kernels: row-major fp32 sgemm on dense matrices (the library
// gemm_library.h chooses: oneMKL, or oneDNN with OpenBLAS where oneDNN declines).
#pragma once

#include <cstdint>

#include "kernels/matmul/blas_gemm.h"
#include "kernels/matmul/dnnl_matmul.h"

namespace openneuron::kernels {

// c[m,n] = alpha * op(a) @ op(b) + beta * c, row-major with leading dimensions lda/ldb/ldc.
inline void nn_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                     const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                     int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum; BLAS would reject the zero leading dimensions
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    }
    return;
  }
  if (dense_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) return;
  blas_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace openneuron::kernels
