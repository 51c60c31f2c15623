#include "kernels/matmul/blas_gemm.h"

#include <cblas.h>

#include <algorithm>
#include <type_traits>

#include "kernels/runtime/blas_threads.h"
#include "kernels/runtime/gemm_library.h"
#include "kernels/runtime/library_calls.h"
#include "kernels/runtime/mkl_library.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

void blas_call(const MklGemms* mkl, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
               const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  if (mkl != nullptr) {
    mkl->sgemm(kMklRowMajor, trans_a ? kMklTrans : kMklNoTrans, trans_b ? kMklTrans : kMklNoTrans,
               m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void blas_call(const MklGemms* mkl, bool trans_a, bool trans_b, int m, int n, int k, double alpha,
               const double* a, int lda, const double* b, int ldb, double beta, double* c,
               int ldc) {
  if (mkl != nullptr) {
    mkl->dgemm(kMklRowMajor, trans_a ? kMklTrans : kMklNoTrans, trans_b ? kMklTrans : kMklNoTrans,
               m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Below this many multiply-adds a product stays on one thread (waking others costs more).
constexpr int64_t kSplitWork = int64_t{1} << 21;

template <typename T>
void split_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  const GemmFamily family = std::is_same_v<T, double> ? GemmFamily::kFloat64 : GemmFamily::kFloat32;
  const MklGemms* mkl = gemm_uses_mkl(family) ? mkl_gemms() : nullptr;
  if (mkl == nullptr) single_threaded_blas();
  count_library_call(mkl != nullptr ? LibraryCall::kMklGemm : LibraryCall::kOpenBlasGemm);
  const int threads = kernel_thread_count();
  const auto whole = [&] {
    blas_call(mkl, trans_a, trans_b, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
              alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
  };
  if (threads <= 1 || m * n * k < kSplitWork) return whole();
  // Rows of c when there are enough for every thread (each block reads all of b), else
  // columns; blocks are multiples of 16 so every piece keeps the BLAS's full-width kernels.
  const bool by_rows = m >= 16 * threads || m >= n;
  const int64_t extent = by_rows ? m : n;
  const int64_t block = std::max<int64_t>(16, (extent + threads - 1) / threads + 15) / 16 * 16;
  parallel_for(0, (extent + block - 1) / block, 1, [&](int64_t first, int64_t last) {
    if (mkl == nullptr) single_threaded_blas();
    for (int64_t piece = first; piece < last; ++piece) {
      const int64_t begin = piece * block;
      const int64_t length = std::min(block, extent - begin);
      if (by_rows) {
        const T* a_rows = trans_a ? a + begin : a + begin * lda;
        blas_call(mkl, trans_a, trans_b, static_cast<int>(length), static_cast<int>(n),
                  static_cast<int>(k), alpha, a_rows, static_cast<int>(lda), b,
                  static_cast<int>(ldb), beta, c + begin * ldc, static_cast<int>(ldc));
      } else {
        const T* b_cols = trans_b ? b + begin * ldb : b + begin;
        blas_call(mkl, trans_a, trans_b, static_cast<int>(m), static_cast<int>(length),
                  static_cast<int>(k), alpha, a, static_cast<int>(lda), b_cols,
                  static_cast<int>(ldb), beta, c + begin, static_cast<int>(ldc));
      }
    }
  });
}

}  // namespace

void blas_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                int64_t ldc) {
  split_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void blas_dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
                int64_t ldc) {
  split_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace openneuron::kernels
