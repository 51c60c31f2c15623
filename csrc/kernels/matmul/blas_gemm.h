// Row-major GEMM through the host BLAS (oneMKL, or OpenBLAS: gemm_library.h chooses):
// c = alpha * op(a) @ op(b) + beta * c with leading dimensions. Large products are split into
// row (or column) blocks across parallel_for's threads, each block a single-threaded BLAS call
// (OpenBLAS's own idle threads would spin; oneMKL runs sequential).
#pragma once

#include <cstdint>

namespace openneuron::kernels {

// m, n, k > 0 and every leading dimension must fit BLAS's int (the callers check).
void blas_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                int64_t ldc);

void blas_dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
                int64_t ldc);

}  // namespace openneuron::kernels
