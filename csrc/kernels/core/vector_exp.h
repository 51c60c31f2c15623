// A branch-free fp32 exp (within 2 ulp of the exact result) that the compiler can vectorise,
// unlike libm's expf without -ffast-math. Used by softmax's inner loops.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/core/float_conversions.h"

namespace openneuron::kernels {

inline float vector_exp(float x) {
  // Beyond these bounds exp is inf / 0 in fp32; clamping keeps 2^n representable below.
  const float clamped = std::min(std::max(x, -104.0f), 88.8f);
  // n = round(x / ln 2) by the 1.5 * 2^23 trick; r = x - n ln 2 in two parts for accuracy.
  constexpr float kRoundingShift = 12582912.0f;
  const float shifted = clamped * 1.44269504088896341f + kRoundingShift;
  const float n = shifted - kRoundingShift;
  const int32_t exponent = static_cast<int32_t>(float_to_bits(shifted)) -
                           static_cast<int32_t>(float_to_bits(kRoundingShift));
  const float r = (clamped - n * 0.693359375f) + n * 2.12194440e-4f;
  // Minimax polynomial for e^r on [-ln2/2, ln2/2] (Cephes coefficients).
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e_r = p * r * r + r + 1.0f;
  // Scale by 2^n in two steps so that subnormal results and overflow to inf come out right.
  const int32_t half = exponent >> 1;
  const float scale_a = bits_to_float(static_cast<uint32_t>(half + 127) << 23);
  const float scale_b = bits_to_float(static_cast<uint32_t>(exponent - half + 127) << 23);
  const float result = e_r * scale_a * scale_b;
  return x != x ? x : result;  // NaN in, NaN out
}

}  // namespace openneuron::kernels
