// Bit-exact conversions between fp32 and the narrow float formats (float16, bfloat16,
// float8 e4m3fn, float8 e5m2), rounding to nearest even the way PyTorch does.
#pragma once

#include <cstdint>
#include <cstring>

namespace openneuron::kernels {

inline uint32_t float_to_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

inline float bits_to_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

namespace detail {

constexpr uint32_t kFloatSignMask = 0x80000000u;
constexpr uint32_t kFloatInfBits = 0x7F800000u;

// Rounds a finite-or-infinite, non-NaN fp32 magnitude (sign bit clear) to the nearest-even
// code of a narrow format with IEEE-style subnormals. Codes beyond the largest finite value
// are returned as they are; each format decides between inf, NaN and saturation.
template <int kExpBits, int kManBits>
inline uint32_t round_magnitude_to_narrow(uint32_t abs_bits) {
  constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  constexpr int kShift = 23 - kManBits;
  constexpr uint32_t kMinNormalBits = static_cast<uint32_t>(127 - kBias + 1) << 23;
  if (abs_bits < kMinNormalBits) {
    // Scale so one subnormal step is 1.0; adding 2^23 makes the FPU round to an integer
    // (to nearest even) that lands in the low mantissa bits.
    constexpr float kScale = static_cast<float>(1ull << (kBias - 1 + kManBits));
    const float shifted = bits_to_float(abs_bits) * kScale + 8388608.0f;
    return float_to_bits(shifted) - float_to_bits(8388608.0f);
  }
  const uint32_t rebiased = abs_bits - (static_cast<uint32_t>(127 - kBias) << 23);
  const uint32_t lowest_kept_bit = (rebiased >> kShift) & 1u;
  return (rebiased + ((1u << (kShift - 1)) - 1u) + lowest_kept_bit) >> kShift;
}

// Decodes a finite narrow-format magnitude code (sign stripped) to fp32, exactly.
template <int kExpBits, int kManBits>
inline float narrow_magnitude_to_float(uint32_t code) {
  constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  const uint32_t exponent = code >> kManBits;
  const uint32_t mantissa = code & ((1u << kManBits) - 1u);
  if (exponent == 0) {
    constexpr float kSubnormalStep = 1.0f / static_cast<float>(1ull << (kBias - 1 + kManBits));
    return static_cast<float>(mantissa) * kSubnormalStep;
  }
  return bits_to_float(((exponent + 127u - kBias) << 23) | (mantissa << (23 - kManBits)));
}

}  // namespace detail

// bfloat16 keeps fp32's exponent, so rounding is a carry into the upper half-word and
// overflow reaches inf by itself. NaN becomes the canonical quiet NaN 0x7FC0.
inline uint16_t float_to_bfloat16_bits(float value) {
  const uint32_t bits = float_to_bits(value);
  if ((bits & ~detail::kFloatSignMask) > detail::kFloatInfBits) return 0x7FC0;
  const uint32_t lowest_kept_bit = (bits >> 16) & 1u;
  return static_cast<uint16_t>((bits + 0x7FFFu + lowest_kept_bit) >> 16);
}

inline float bfloat16_bits_to_float(uint16_t bits) {
  return bits_to_float(static_cast<uint32_t>(bits) << 16);
}

// IEEE binary16. Overflow rounds to inf; NaN keeps its sign and top payload bits, quieted.
inline uint16_t float_to_half_bits(float value) {
  const uint32_t bits = float_to_bits(value);
  const uint16_t sign = static_cast<uint16_t>((bits & detail::kFloatSignMask) >> 16);
  const uint32_t abs_bits = bits & ~detail::kFloatSignMask;
  if (abs_bits > detail::kFloatInfBits) {
    return sign | 0x7E00u | static_cast<uint16_t>((abs_bits & 0x007FFFFFu) >> 13);
  }
  uint32_t code = detail::round_magnitude_to_narrow<5, 10>(abs_bits);
  if (code > 0x7C00u) code = 0x7C00u;
  return sign | static_cast<uint16_t>(code);
}

inline float half_bits_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t code = bits & 0x7FFFu;
  if (code >= 0x7C00u) return bits_to_float(sign | detail::kFloatInfBits | ((code & 0x3FFu) << 13));
  return bits_to_float(sign | float_to_bits(detail::narrow_magnitude_to_float<5, 10>(code)));
}

// float8 e4m3fn (no infinities, max 448, NaN = S.1111.111). Like PyTorch 2.13's casts,
// finite overflow and infinities saturate to +-448; NaN becomes 0x7F with its sign.
inline uint8_t float_to_e4m3fn_bits(float value) {
  const uint32_t bits = float_to_bits(value);
  const uint8_t sign = static_cast<uint8_t>((bits & detail::kFloatSignMask) >> 24);
  const uint32_t abs_bits = bits & ~detail::kFloatSignMask;
  if (abs_bits > detail::kFloatInfBits) return sign | 0x7Fu;
  uint32_t code = detail::round_magnitude_to_narrow<4, 3>(abs_bits);
  if (code > 0x7Eu) code = 0x7Eu;
  return sign | static_cast<uint8_t>(code);
}

inline float e4m3fn_bits_to_float(uint8_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x80u) << 24;
  const uint32_t code = bits & 0x7Fu;
  if (code == 0x7Fu) return bits_to_float(sign | 0x7FC00000u);
  return bits_to_float(sign | float_to_bits(detail::narrow_magnitude_to_float<4, 3>(code)));
}

// float8 e5m2: IEEE-like, overflow rounds to inf, NaN becomes 0x7F with its sign.
inline uint8_t float_to_e5m2_bits(float value) {
  const uint32_t bits = float_to_bits(value);
  const uint8_t sign = static_cast<uint8_t>((bits & detail::kFloatSignMask) >> 24);
  const uint32_t abs_bits = bits & ~detail::kFloatSignMask;
  if (abs_bits > detail::kFloatInfBits) return sign | 0x7Fu;
  uint32_t code = detail::round_magnitude_to_narrow<5, 2>(abs_bits);
  if (code > 0x7Cu) code = 0x7Cu;
  return sign | static_cast<uint8_t>(code);
}

inline float e5m2_bits_to_float(uint8_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x80u) << 24;
  const uint32_t code = bits & 0x7Fu;
  if (code >= 0x7Cu) return bits_to_float(sign | detail::kFloatInfBits | ((code & 0x3u) << 21));
  return bits_to_float(sign | float_to_bits(detail::narrow_magnitude_to_float<5, 2>(code)));
}

}  // namespace openneuron::kernels
