// Register-blocked fp32 matmul kernels. A block of R output rows × C vectors of columns stays in
// registers while k runs 0..K-1, each accumulator one output element's own fused multiply-add
// chain, so the order of operations is the reference's. Column blocks are the outer loop: one
// panel of b (K × C vectors) stays in L1 while every row block uses it.
#include "sim/matmul_kernel.h"

#include <immintrin.h>

#include "sim/vector_isa.h"

namespace openneuron::sim {

namespace {

// AVX2 (the baseline): 6 rows × 2 vectors of 8 = 12 accumulators of the 16 ymm registers.
constexpr int kRows2 = 6, kCols2 = 2, kWidth2 = 8;

__m256i lanes_below(int64_t count) {
  alignas(32) static const int32_t ramp[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  const __m256i index = _mm256_load_si256(reinterpret_cast<const __m256i*>(ramp));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(count)), index);
}

template <int R, int C>
void block_avx2(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t k_size,
                float* out, int64_t ldc, __m256i last, bool accumulate) {
  __m256 acc[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  }
  for (int64_t k = 0; k < k_size; ++k) {
    const float* bk = b + k * ldb;
    __m256 bv[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c)
      bv[c] = c == C - 1 ? _mm256_maskload_ps(bk + c * kWidth2, last)
                         : _mm256_loadu_ps(bk + c * kWidth2);
    const float* ak = a + k * lda;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(ak + r);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(av, bv[c], acc[r][c]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      float* o = out + r * ldc + c * kWidth2;
      __m256 value = acc[r][c];
      if (c < C - 1) {
        if (accumulate) value = _mm256_add_ps(_mm256_loadu_ps(o), value);
        _mm256_storeu_ps(o, value);
      } else {
        if (accumulate) value = _mm256_add_ps(_mm256_maskload_ps(o, last), value);
        _mm256_maskstore_ps(o, last, value);
      }
    }
  }
}

template <int C>
void rows_avx2(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t k_size, int64_t m,
               float* out, int64_t ldc, __m256i last, bool accumulate) {
  int64_t m0 = 0;
  for (; m0 + kRows2 <= m; m0 += kRows2)
    block_avx2<kRows2, C>(a + m0, lda, b, ldb, k_size, out + m0 * ldc, ldc, last, accumulate);
  const float* ar = a + m0;
  float* o = out + m0 * ldc;
  switch (m - m0) {
    case 1:
      return block_avx2<1, C>(ar, lda, b, ldb, k_size, o, ldc, last, accumulate);
    case 2:
      return block_avx2<2, C>(ar, lda, b, ldb, k_size, o, ldc, last, accumulate);
    case 3:
      return block_avx2<3, C>(ar, lda, b, ldb, k_size, o, ldc, last, accumulate);
    case 4:
      return block_avx2<4, C>(ar, lda, b, ldb, k_size, o, ldc, last, accumulate);
    case 5:
      return block_avx2<5, C>(ar, lda, b, ldb, k_size, o, ldc, last, accumulate);
    default:
      return;
  }
}

void matmul_avx2(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t k, int64_t m,
                 int64_t n, float* out, int64_t ldc, bool accumulate) {
  constexpr int64_t kBlock = kCols2 * kWidth2;
  const __m256i all = _mm256_set1_epi32(-1);
  int64_t n0 = 0;
  for (; n0 + kBlock <= n; n0 += kBlock)
    rows_avx2<kCols2>(a, lda, b + n0, ldb, k, m, out + n0, ldc, all, accumulate);
  const int64_t rest = n - n0;
  if (rest > kWidth2) {
    rows_avx2<2>(a, lda, b + n0, ldb, k, m, out + n0, ldc, lanes_below(rest - kWidth2), accumulate);
  } else if (rest > 0) {
    rows_avx2<1>(a, lda, b + n0, ldb, k, m, out + n0, ldc, lanes_below(rest), accumulate);
  }
}

// AVX-512 code lives in namespace isa_avx512 (the project's marker for code that needs it).
namespace isa_avx512 {

// AVX-512: 8 rows × 3 vectors of 16 = 24 accumulators of the 32 zmm registers.
constexpr int kRows5 = 8, kCols5 = 3, kWidth5 = 16;

template <int R, int C>
OPENNEURON_SIM_AVX512 void block_avx512(const float* a, int64_t lda, const float* b, int64_t ldb,
                                        int64_t k_size, float* out, int64_t ldc, __mmask16 last,
                                        bool accumulate) {
  __m512 acc[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < k_size; ++k) {
    const float* bk = b + k * ldb;
    __m512 bv[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c)
      bv[c] = c == C - 1 ? _mm512_maskz_loadu_ps(last, bk + c * kWidth5)
                         : _mm512_loadu_ps(bk + c * kWidth5);
    const float* ak = a + k * lda;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(ak[r]);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(av, bv[c], acc[r][c]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      float* o = out + r * ldc + c * kWidth5;
      const __mmask16 mask = c == C - 1 ? last : static_cast<__mmask16>(0xFFFF);
      __m512 value = acc[r][c];
      if (accumulate) value = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, o), value);
      _mm512_mask_storeu_ps(o, mask, value);
    }
  }
}

template <int C>
OPENNEURON_SIM_AVX512 void rows_avx512(const float* a, int64_t lda, const float* b, int64_t ldb,
                                       int64_t k_size, int64_t m, float* out, int64_t ldc,
                                       __mmask16 last, bool accumulate) {
  int64_t m0 = 0;
  for (; m0 + kRows5 <= m; m0 += kRows5)
    block_avx512<kRows5, C>(a + m0, lda, b, ldb, k_size, out + m0 * ldc, ldc, last, accumulate);
  const float* ar = a + m0;
  float* o = out + m0 * ldc;
  switch (m - m0) {
    case 1:
      return block_avx512<1, C>(ar, lda, b, ldb, k_size, o, ldc, last, accumulate);
    case 2:
      return block_avx512<2, C>(ar, lda, b, ldb, k_size, o, ldc, last, accumulate);
    case 3:
      return block_avx512<3, C>(ar, lda, b, ldb, k_size, o, ldc, last, accumulate);
    case 4:
      return block_avx512<4, C>(ar, lda, b, ldb, k_size, o, ldc, last, accumulate);
    case 5:
      return block_avx512<5, C>(ar, lda, b, ldb, k_size, o, ldc, last, accumulate);
    case 6:
      return block_avx512<6, C>(ar, lda, b, ldb, k_size, o, ldc, last, accumulate);
    case 7:
      return block_avx512<7, C>(ar, lda, b, ldb, k_size, o, ldc, last, accumulate);
    default:
      return;
  }
}

OPENNEURON_SIM_AVX512 void matmul_avx512(const float* a, int64_t lda, const float* b, int64_t ldb,
                                         int64_t k, int64_t m, int64_t n, float* out, int64_t ldc,
                                         bool accumulate) {
  constexpr int64_t kBlock = kCols5 * kWidth5;
  const auto below = [](int64_t count) { return static_cast<__mmask16>((1u << count) - 1u); };
  int64_t n0 = 0;
  for (; n0 + kBlock <= n; n0 += kBlock)
    rows_avx512<kCols5>(a, lda, b + n0, ldb, k, m, out + n0, ldc, 0xFFFF, accumulate);
  const int64_t rest = n - n0;
  if (rest > 2 * kWidth5) {
    rows_avx512<3>(a, lda, b + n0, ldb, k, m, out + n0, ldc, below(rest - 2 * kWidth5), accumulate);
  } else if (rest > kWidth5) {
    rows_avx512<2>(a, lda, b + n0, ldb, k, m, out + n0, ldc, below(rest - kWidth5), accumulate);
  } else if (rest > 0) {
    rows_avx512<1>(a, lda, b + n0, ldb, k, m, out + n0, ldc, below(rest), accumulate);
  }
}

}  // namespace isa_avx512

}  // namespace

void matmul_fp32(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t k, int64_t m,
                 int64_t n, float* out, int64_t ldc, bool accumulate) {
  if (m <= 0 || n <= 0) return;
  if (use_avx512()) {
    isa_avx512::matmul_avx512(a, lda, b, ldb, k, m, n, out, ldc, accumulate);
  } else {
    matmul_avx2(a, lda, b, ldb, k, m, n, out, ldc, accumulate);
  }
}

}  // namespace openneuron::sim
