// Private helper of the per-ISA attention and row-norm kernels (isa_variant.h): contiguous runs of
// float16/bfloat16 widened to / rounded from fp32 sixteen at a time (float16 with the CPU's
// conversion instructions, bfloat16 with integer rounding). Results equal float_conversions.h's
// (round to nearest even, overflow to inf, NaN quieted / canonical for bfloat16); only a signalling
// float16 NaN widens to a quiet NaN here. Explicit vectors avoid the per-call peeling of
// auto-vectorised loops, which dominates on rows of a few hundred elements.
#pragma once

#include <cstdint>

#include "kernels/core/float_conversions.h"
#include "kernels/runtime/isa_variant.h"

OPENNEURON_ISA_BEGIN
namespace openneuron::kernels::OPENNEURON_ISA_NAMESPACE::attention_convert {

// dst[i] = float(src[i]) for i < n; src holds float16 bits.
inline void widen_half(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
#if OPENNEURON_KERNEL_AVX512
  for (; i + 16 <= n; i += 16) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    // Masked forms with an all-ones mask: GCC 12 warns about the plain ones' undefined sources.
    _mm512_storeu_ps(dst + i, _mm512_mask_cvtph_ps(_mm512_setzero_ps(), 0xFFFF, bits));
  }
#endif
  for (; i < n; ++i) dst[i] = half_bits_to_float(src[i]);
}

// dst[i] = float16 bits of src[i] rounded to nearest even, for i < n.
inline void narrow_half(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
#if OPENNEURON_KERNEL_AVX512
  for (; i + 16 <= n; i += 16) {
    const __m256i bits =
        _mm512_mask_cvtps_ph(_mm256_setzero_si256(), 0xFFFF, _mm512_loadu_ps(src + i),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), bits);
  }
#endif
  for (; i < n; ++i) dst[i] = float_to_half_bits(src[i]);
}

// dst[i] = float(src[i]) for i < n; src holds bfloat16 bits.
inline void widen_bfloat16(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
#if OPENNEURON_KERNEL_AVX512
  for (; i + 16 <= n; i += 16) {
    const __m512i wide =
        _mm512_mask_cvtepu16_epi32(_mm512_setzero_si512(), 0xFFFF,
                                   _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
    _mm512_storeu_si512(dst + i, _mm512_mask_slli_epi32(wide, 0xFFFF, wide, 16));
  }
#endif
  for (; i < n; ++i) dst[i] = bfloat16_bits_to_float(src[i]);
}

#if OPENNEURON_KERNEL_AVX512
// Sixteen fp32 values rounded to bfloat16 bits (nearest even, NaN -> 0x7FC0).
inline __m256i narrow_bfloat16_vector(__m512 values) {
  const __m512i rounding_bias = _mm512_set1_epi32(0x7FFF);
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i quiet_nan = _mm512_set1_epi32(0x7FC0);
  const __m512i bits = _mm512_castps_si512(values);
  // (Masked shifts with an all-ones mask: GCC 12 warns about the plain ones' undefined sources.)
  const __m512i lowest_kept = _mm512_and_si512(_mm512_mask_srli_epi32(bits, 0xFFFF, bits, 16), one);
  const __m512i biased = _mm512_add_epi32(bits, _mm512_add_epi32(rounding_bias, lowest_kept));
  __m512i rounded = _mm512_mask_srli_epi32(biased, 0xFFFF, biased, 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(values, values, _CMP_UNORD_Q);
  rounded = _mm512_mask_blend_epi32(nan, rounded, quiet_nan);
  return _mm512_mask_cvtepi32_epi16(_mm256_setzero_si256(), 0xFFFF, rounded);
}
#endif

// dst[i] = bfloat16 bits of src[i] rounded to nearest even (NaN -> 0x7FC0), for i < n.
inline void narrow_bfloat16(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
#if OPENNEURON_KERNEL_AVX512
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        narrow_bfloat16_vector(_mm512_loadu_ps(src + i)));
  }
#endif
  for (; i < n; ++i) dst[i] = float_to_bfloat16_bits(src[i]);
}

}  // namespace openneuron::kernels::OPENNEURON_ISA_NAMESPACE::attention_convert
OPENNEURON_ISA_END
