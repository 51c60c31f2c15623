#include "sim/vector_loops.h"

#include <immintrin.h>

#include <limits>
#include <type_traits>

#include "sim/alu.h"
#include "sim/vector_isa.h"

namespace openneuron::sim {

namespace {

template <AluOp kOp>
using Op = std::integral_constant<AluOp, kOp>;

// Calls f with the vectorised operation as a compile-time constant.
template <typename F>
void with_vector_alu(AluOp op, F&& f) {
  switch (op) {
    case AluOp::kAdd:
      return f(Op<AluOp::kAdd>{});
    case AluOp::kSubtract:
      return f(Op<AluOp::kSubtract>{});
    case AluOp::kMultiply:
      return f(Op<AluOp::kMultiply>{});
    case AluOp::kDivide:
      return f(Op<AluOp::kDivide>{});
    case AluOp::kMax:
      return f(Op<AluOp::kMax>{});
    case AluOp::kMin:
      return f(Op<AluOp::kMin>{});
    default:
      return;
  }
}

// maxps / minps return the second operand unless the first compares greater / less, as
// apply_alu's selects do; the lanes where either operand is NaN are then set to the quiet NaN.
template <AluOp kOp>
inline __m256 apply8(__m256 a, __m256 b) {
  if constexpr (kOp == AluOp::kAdd) return _mm256_add_ps(a, b);
  if constexpr (kOp == AluOp::kSubtract) return _mm256_sub_ps(a, b);
  if constexpr (kOp == AluOp::kMultiply) return _mm256_mul_ps(a, b);
  if constexpr (kOp == AluOp::kDivide) return _mm256_div_ps(a, b);
  const __m256 r = kOp == AluOp::kMax ? _mm256_max_ps(a, b) : _mm256_min_ps(a, b);
  return _mm256_blendv_ps(r, _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()),
                          _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
}

template <AluOp kOp>
void elementwise8(float* out, const float* x, const float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, apply8<kOp>(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) out[i] = apply_alu(kOp, x[i], y[i]);
}

namespace isa_avx512 {  // the project's marker for code that needs AVX-512

template <AluOp kOp>
OPENNEURON_SIM_AVX512 inline __m512 apply16(__m512 a, __m512 b) {
  if constexpr (kOp == AluOp::kAdd) return _mm512_add_ps(a, b);
  if constexpr (kOp == AluOp::kSubtract) return _mm512_sub_ps(a, b);
  if constexpr (kOp == AluOp::kMultiply) return _mm512_mul_ps(a, b);
  if constexpr (kOp == AluOp::kDivide) return _mm512_div_ps(a, b);
  // a where a compares greater (less), else b: maxps / minps, as a compare and a blend (GCC 12
  // warns about the intrinsics' undefined pass-through operand).
  const __mmask16 first = _mm512_cmp_ps_mask(a, b, kOp == AluOp::kMax ? _CMP_GT_OQ : _CMP_LT_OQ);
  const __m512 r = _mm512_mask_blend_ps(first, b, a);
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q), r,
                              _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()));
}

template <AluOp kOp>
OPENNEURON_SIM_AVX512 void elementwise16(float* out, const float* x, const float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, apply16<kOp>(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  for (; i < n; ++i) out[i] = apply_alu(kOp, x[i], y[i]);
}

}  // namespace isa_avx512

// kRows rows reduced side by side, each in its own eight-lane accumulator. Max and min leave NaN
// to a mask per row (a lane that met a NaN is a quiet NaN from then on, as in apply_alu).
template <AluOp kOp, int kRows>
void reduce_block(const float* first, int64_t row_floats, int64_t length, float* out) {
  static_assert(kReduceLanes == 8, "one AVX2 vector of lanes");
  constexpr bool kSelects = kOp == AluOp::kMax || kOp == AluOp::kMin;
  float identity = 0.0f;
  reduction_identity(kOp, &identity);
  __m256 acc[kRows], nan[kRows];
  for (int r = 0; r < kRows; ++r) {
    acc[r] = _mm256_set1_ps(identity);
    nan[r] = _mm256_setzero_ps();
  }
  int64_t j = 0;
  for (; j + kReduceLanes <= length; j += kReduceLanes) {
    for (int r = 0; r < kRows; ++r) {
      const __m256 v = _mm256_loadu_ps(first + r * row_floats + j);
      if constexpr (kOp == AluOp::kAdd) acc[r] = _mm256_add_ps(acc[r], v);
      if constexpr (kOp == AluOp::kMultiply) acc[r] = _mm256_mul_ps(acc[r], v);
      if constexpr (kOp == AluOp::kMax) acc[r] = _mm256_max_ps(acc[r], v);
      if constexpr (kOp == AluOp::kMin) acc[r] = _mm256_min_ps(acc[r], v);
      if constexpr (kSelects) nan[r] = _mm256_or_ps(nan[r], _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
  }
  for (int r = 0; r < kRows; ++r) {
    if constexpr (kSelects)
      acc[r] =
          _mm256_blendv_ps(acc[r], _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()), nan[r]);
    alignas(32) float lanes[kReduceLanes];
    _mm256_store_ps(lanes, acc[r]);
    const float* row = first + r * row_floats;
    for (int64_t t = j; t < length; ++t) lanes[t - j] = reduce_step(kOp, lanes[t - j], row[t]);
    out[r] = combine_lanes(kOp, lanes);
  }
}

}  // namespace

bool has_vector_alu(AluOp op) {
  switch (op) {
    case AluOp::kAdd:
    case AluOp::kSubtract:
    case AluOp::kMultiply:
    case AluOp::kDivide:
    case AluOp::kMax:
    case AluOp::kMin:
      return true;
    default:
      return false;
  }
}

void elementwise_vector(AluOp op, float* out, const float* x, const float* y, int64_t n) {
  const bool wide = use_avx512();
  with_vector_alu(op, [&](auto alu) {
    constexpr AluOp kOp = decltype(alu)::value;
    if (wide) {
      isa_avx512::elementwise16<kOp>(out, x, y, n);
    } else {
      elementwise8<kOp>(out, x, y, n);
    }
  });
}

bool reduce_rows_vector(AluOp op, const float* first, int64_t row_floats, int64_t rows,
                        int64_t length, float* out) {
  if (op != AluOp::kAdd && op != AluOp::kMultiply && op != AluOp::kMax && op != AluOp::kMin)
    return false;
  with_vector_alu(op, [&](auto alu) {
    constexpr AluOp kOp = decltype(alu)::value;
    if constexpr (kOp == AluOp::kAdd || kOp == AluOp::kMultiply || kOp == AluOp::kMax ||
                  kOp == AluOp::kMin) {
      int64_t r = 0;
      for (; r + 4 <= rows; r += 4)
        reduce_block<kOp, 4>(first + r * row_floats, row_floats, length, out + r);
      for (; r < rows; ++r)
        reduce_block<kOp, 1>(first + r * row_floats, row_floats, length, out + r);
    }
  });
  return true;
}

}  // namespace openneuron::sim
