// Private helper of the attention and row-norm kernels: contiguous runs of float16 widened
// to / rounded from fp32 with the CPU's conversion instructions (the portable bit-twiddling
// conversions do not vectorise). Results equal float_conversions.h's (round to nearest even,
// overflow to inf, NaN quieted); only a signalling-NaN input widens to a quiet NaN here.
#pragma once

#include <cstdint>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "kernels/float_conversions.h"

namespace openneuron::kernels::attention_convert {

// dst[i] = float(src[i]) for i < n; src holds float16 bits.
inline void widen_half(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
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
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) {
    const __m256i bits = _mm512_mask_cvtps_ph(_mm256_setzero_si256(), 0xFFFF, _mm512_loadu_ps(src + i),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), bits);
  }
#endif
  for (; i < n; ++i) dst[i] = float_to_half_bits(src[i]);
}

}  // namespace openneuron::kernels::attention_convert
