// Register-blocked block products and softmax row helpers for the attention kernels. The
// AVX-512 paths keep a tile of up to 6 x 64 outputs in registers while streaming k; other
// hosts get plain loops the compiler vectorises.
#include "kernels/attention/attention_block_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/attention/attention_convert.h"
#include "kernels/core/vector_exp.h"
#include "kernels/runtime/isa_kernels.h"
#include "kernels/runtime/isa_variant.h"

OPENNEURON_ISA_BEGIN
namespace openneuron::kernels::OPENNEURON_ISA_NAMESPACE::attention_blocks {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

#if OPENNEURON_KERNEL_AVX512

constexpr int kTileRows = 6;
constexpr int kTileVectors = 4;  // 64 fp32 columns
constexpr int64_t kTileColumns = 16 * kTileVectors;

// One tile: kRows rows of c, kVectors 16-wide column vectors of which the last is masked.
// The accumulators are named variables (not an array) so GCC keeps them in registers.
#define ONEURON_TILE_VARS(r) __m512 c##r##0 = zero, c##r##1 = zero, c##r##2 = zero, c##r##3 = zero
#define ONEURON_TILE_FOR(r, v, statement)                                     \
  if constexpr (kRows > r && kVectors > v) {                                  \
    const __mmask16 mask = v == kVectors - 1 ? last_mask : __mmask16(0xFFFF); \
    (void)mask;                                                               \
    statement;                                                                \
  }
#define ONEURON_TILE_ROW(r, statement_template)                              \
  statement_template(r, 0) statement_template(r, 1) statement_template(r, 2) \
      statement_template(r, 3)
#define ONEURON_TILE_ALL(statement_template) \
  ONEURON_TILE_ROW(0, statement_template)    \
  ONEURON_TILE_ROW(1, statement_template)    \
  ONEURON_TILE_ROW(2, statement_template)    \
  ONEURON_TILE_ROW(3, statement_template)    \
  ONEURON_TILE_ROW(4, statement_template) ONEURON_TILE_ROW(5, statement_template)
#define ONEURON_TILE_LOAD(r, v) \
  ONEURON_TILE_FOR(r, v, c##r##v = _mm512_maskz_loadu_ps(mask, c + r * ldc + 16 * v))
#define ONEURON_TILE_STORE(r, v) \
  ONEURON_TILE_FOR(r, v, _mm512_mask_storeu_ps(c + r * ldc + 16 * v, mask, c##r##v))
#define ONEURON_TILE_FMA(r, v) \
  ONEURON_TILE_FOR(r, v, c##r##v = _mm512_fmadd_ps(a##r, b##v, c##r##v))
#define ONEURON_TILE_BROADCAST(r) \
  const __m512 a##r = kRows > r ? _mm512_set1_ps(a_col[(kRows > r ? r : 0) * a_row_stride]) : zero;

template <int kRows, int kVectors>
void gemm_tile(int64_t k, const float* a, int64_t a_row_stride, int64_t a_col_stride,
               const float* b, int64_t ldb, float* c, int64_t ldc, __mmask16 last_mask,
               bool accumulate) {
  const __m512 zero = _mm512_setzero_ps();
  ONEURON_TILE_VARS(0);
  ONEURON_TILE_VARS(1);
  ONEURON_TILE_VARS(2);
  ONEURON_TILE_VARS(3);
  ONEURON_TILE_VARS(4);
  ONEURON_TILE_VARS(5);
  if (accumulate) {
    ONEURON_TILE_ALL(ONEURON_TILE_LOAD)
  }
  for (int64_t p = 0; p < k; ++p) {
    const float* b_row = b + p * ldb;
    const __m512 b0 = _mm512_maskz_loadu_ps(kVectors == 1 ? last_mask : __mmask16(0xFFFF), b_row);
    const __m512 b1 = kVectors > 1 ? _mm512_maskz_loadu_ps(
                                         kVectors == 2 ? last_mask : __mmask16(0xFFFF), b_row + 16)
                                   : zero;
    const __m512 b2 = kVectors > 2 ? _mm512_maskz_loadu_ps(
                                         kVectors == 3 ? last_mask : __mmask16(0xFFFF), b_row + 32)
                                   : zero;
    const __m512 b3 = kVectors > 3 ? _mm512_maskz_loadu_ps(last_mask, b_row + 48) : zero;
    const float* a_col = a + p * a_col_stride;
    ONEURON_TILE_BROADCAST(0)
    ONEURON_TILE_BROADCAST(1)
    ONEURON_TILE_BROADCAST(2)
    ONEURON_TILE_BROADCAST(3)
    ONEURON_TILE_BROADCAST(4)
    ONEURON_TILE_BROADCAST(5)
    ONEURON_TILE_ALL(ONEURON_TILE_FMA)
  }
  ONEURON_TILE_ALL(ONEURON_TILE_STORE)
}

using TileFn = void (*)(int64_t, const float*, int64_t, int64_t, const float*, int64_t, float*,
                        int64_t, __mmask16, bool);

template <int kRows>
constexpr TileFn tile_for_vectors(int vectors) {
  return vectors == 1   ? &gemm_tile<kRows, 1>
         : vectors == 2 ? &gemm_tile<kRows, 2>
         : vectors == 3 ? &gemm_tile<kRows, 3>
                        : &gemm_tile<kRows, 4>;
}

TileFn tile_for(int rows, int vectors) {
  switch (rows) {
    case 1:
      return tile_for_vectors<1>(vectors);
    case 2:
      return tile_for_vectors<2>(vectors);
    case 3:
      return tile_for_vectors<3>(vectors);
    case 4:
      return tile_for_vectors<4>(vectors);
    case 5:
      return tile_for_vectors<5>(vectors);
    default:
      return tile_for_vectors<6>(vectors);
  }
}

// Horizontal max / sum through memory: GCC 12's _mm512_reduce_* trip -Wuninitialized.
float lanes_max(__m512 lanes) {
  alignas(64) float values[16];
  _mm512_store_ps(values, lanes);
  float best = values[0];
  for (int t = 1; t < 16; ++t) best = std::max(best, values[t]);
  return best;
}

float lanes_sum(__m512 lanes) {
  alignas(64) float values[16];
  _mm512_store_ps(values, lanes);
  float total = 0.0f;
  for (int t = 0; t < 16; ++t) total += values[t];
  return total;
}

#endif  // OPENNEURON_KERNEL_AVX512

}  // namespace

void block_gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row_stride,
                int64_t a_col_stride, const float* b, int64_t ldb, float* c, int64_t ldc,
                bool accumulate) {
  if (m <= 0 || n <= 0) return;
#if OPENNEURON_KERNEL_AVX512
  // Column strips outermost: one strip of b (k x 64) stays in L1 while every row tile uses it.
  for (int64_t j0 = 0; j0 < n; j0 += kTileColumns) {
    const int64_t columns = std::min(kTileColumns, n - j0);
    const int vectors = static_cast<int>((columns + 15) / 16);
    const int tail = static_cast<int>(columns - 16 * (vectors - 1));
    const __mmask16 last_mask = static_cast<__mmask16>((1u << tail) - 1u);
    const TileFn full = tile_for(kTileRows, vectors);
    int64_t i0 = 0;
    for (; i0 + kTileRows <= m; i0 += kTileRows) {
      full(k, a + i0 * a_row_stride, a_row_stride, a_col_stride, b + j0, ldb, c + i0 * ldc + j0,
           ldc, last_mask, accumulate);
    }
    if (i0 < m) {
      tile_for(static_cast<int>(m - i0), vectors)(k, a + i0 * a_row_stride, a_row_stride,
                                                  a_col_stride, b + j0, ldb, c + i0 * ldc + j0, ldc,
                                                  last_mask, accumulate);
    }
  }
#else
  for (int64_t i = 0; i < m; ++i) {
    float* c_row = c + i * ldc;
    if (!accumulate) std::fill(c_row, c_row + n, 0.0f);
    for (int64_t p = 0; p < k; ++p) {
      const float a_value = a[i * a_row_stride + p * a_col_stride];
      const float* b_row = b + p * ldb;
      for (int64_t j = 0; j < n; ++j) c_row[j] += a_value * b_row[j];
    }
  }
#endif
}

void transpose_16x16(const float* src, int64_t src_ld, float* dst, int64_t dst_ld) {
#if OPENNEURON_KERNEL_AVX512
  // Four shuffle stages: 1-element, 2-element, then two 128-bit lane interleaves. (Masked
  // forms with an all-ones mask: GCC 12 warns about the plain ones' undefined sources.)
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * src_ld);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_mask_unpacklo_ps(r[i], 0xFFFF, r[i], r[i + 1]);
    t[i + 1] = _mm512_mask_unpackhi_ps(r[i], 0xFFFF, r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_mask_shuffle_ps(t[i], 0xFFFF, t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm512_mask_shuffle_ps(t[i], 0xFFFF, t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] =
        _mm512_mask_shuffle_ps(t[i + 1], 0xFFFF, t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] =
        _mm512_mask_shuffle_ps(t[i + 1], 0xFFFF, t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int half = 0; half < 16; half += 8) {
    for (int i = 0; i < 4; ++i) {
      t[half + i] =
          _mm512_mask_shuffle_f32x4(r[half + i], 0xFFFF, r[half + i], r[half + i + 4], 0x88);
      t[half + i + 4] =
          _mm512_mask_shuffle_f32x4(r[half + i], 0xFFFF, r[half + i], r[half + i + 4], 0xdd);
    }
  }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_mask_shuffle_f32x4(t[i], 0xFFFF, t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_mask_shuffle_f32x4(t[i], 0xFFFF, t[i], t[i + 8], 0xdd);
  }
  for (int i = 0; i < 16; ++i) _mm512_storeu_ps(dst + i * dst_ld, r[i]);
#else
  for (int r = 0; r < 16; ++r) {
    for (int c = 0; c < 16; ++c) dst[c * dst_ld + r] = src[r * src_ld + c];
  }
#endif
}

float row_max(const float* x, int64_t n) {
  int64_t j = 0;
  float best = kNegInf;
#if OPENNEURON_KERNEL_AVX512
  __m512 lanes = _mm512_set1_ps(kNegInf);
  for (; j + 16 <= n; j += 16)
    lanes = _mm512_mask_max_ps(lanes, 0xFFFF, lanes, _mm512_loadu_ps(x + j));
  best = lanes_max(lanes);
#endif
  for (; j < n; ++j) best = std::max(best, x[j]);
  return best;
}

float exp_shifted_sum(float* x, int64_t n, float shift) {
  int64_t j = 0;
  float total = 0.0f;
#if OPENNEURON_KERNEL_AVX512
  __m512 lanes = _mm512_setzero_ps();
  for (; j + 16 <= n; j += 16) {
    alignas(64) float block[16];
    for (int t = 0; t < 16; ++t) block[t] = vector_exp(x[j + t] - shift);
    const __m512 values = _mm512_load_ps(block);
    _mm512_storeu_ps(x + j, values);
    lanes = _mm512_add_ps(lanes, values);
  }
  total = lanes_sum(lanes);
#endif
  for (; j < n; ++j) {
    x[j] = vector_exp(x[j] - shift);
    total += x[j];
  }
  return total;
}

void exp_shifted(float* x, int64_t n, float shift) {
  for (int64_t j = 0; j < n; ++j) x[j] = vector_exp(x[j] - shift);
}

void scale_row(float* x, int64_t n, float factor) {
  for (int64_t j = 0; j < n; ++j) x[j] *= factor;
}

float dot(const float* x, const float* y, int64_t n) {
  int64_t j = 0;
  float total = 0.0f;
#if OPENNEURON_KERNEL_AVX512
  __m512 lanes = _mm512_setzero_ps();
  for (; j + 16 <= n; j += 16) {
    lanes = _mm512_fmadd_ps(_mm512_loadu_ps(x + j), _mm512_loadu_ps(y + j), lanes);
  }
  total = lanes_sum(lanes);
#endif
  for (; j < n; ++j) total += x[j] * y[j];
  return total;
}

void widen_half(const uint16_t* src, float* dst, int64_t n) {
  attention_convert::widen_half(src, dst, n);
}

void narrow_half(const float* src, uint16_t* dst, int64_t n) {
  attention_convert::narrow_half(src, dst, n);
}

void widen_bfloat16(const uint16_t* src, float* dst, int64_t n) {
  attention_convert::widen_bfloat16(src, dst, n);
}

void narrow_bfloat16(const float* src, uint16_t* dst, int64_t n) {
  attention_convert::narrow_bfloat16(src, dst, n);
}

}  // namespace openneuron::kernels::OPENNEURON_ISA_NAMESPACE::attention_blocks
OPENNEURON_ISA_END
