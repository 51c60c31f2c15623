// Scalar building blocks shared by the pointwise op definitions: wrapping integer arithmetic,
// NaN-propagating min/max, and the floor division and modulus PyTorch defines. Private.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/core/element_types.h"
#include "kernels/core/scalar.h"
#include "kernels/core/vector_exp.h"

namespace openneuron::kernels::pointwise_detail {

// A host scalar in compute type C: integers stay exact, floats are converted once.
template <typename C>
inline C scalar_as(Scalar value) {
  if constexpr (std::is_integral_v<C>) {
    return value.is_integral ? value.i : cast_value<int64_t>(value.f);
  } else {
    return static_cast<C>(value.to_double());
  }
}

// Integer arithmetic wraps (through uint64) instead of overflowing into undefined behaviour.
template <typename C>
inline C wrap_add(C x, C y) {
  if constexpr (std::is_integral_v<C>) {
    return static_cast<C>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y));
  } else {
    return x + y;
  }
}
template <typename C>
inline C wrap_mul(C x, C y) {
  if constexpr (std::is_integral_v<C>) {
    return static_cast<C>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
  } else {
    return x * y;
  }
}
template <typename C>
inline C wrap_neg(C x) {
  if constexpr (std::is_integral_v<C>) {
    return static_cast<C>(uint64_t{0} - static_cast<uint64_t>(x));
  } else {
    return -x;
  }
}

template <typename C>
inline bool is_nan(C x) {
  if constexpr (std::is_integral_v<C>) {
    return false;
  } else {
    return x != x;
  }
}

// max/min that return NaN when either side is NaN and keep x on ties (so -0.0 vs 0.0 keeps x).
template <typename C>
inline C propagating_max(C x, C y) {
  if (is_nan(y)) return y;
  return x < y ? y : x;
}
template <typename C>
inline C propagating_min(C x, C y) {
  if (is_nan(y)) return y;
  return y < x ? y : x;
}

// fp32 exp: the vectorizable polynomial for float, libm for double.
template <typename C>
inline C fast_exp(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return vector_exp(x);
  } else {
    return std::exp(x);
  }
}

// Integer division helpers: x / 0 gives 0 (PyTorch raises; the device cannot stop mid-queue).
inline int64_t int_div_trunc(int64_t x, int64_t y) {
  if (y == 0) return 0;
  if (y == -1) return wrap_neg(x);
  return x / y;
}
inline int64_t int_mod_trunc(int64_t x, int64_t y) {
  if (y == 0 || y == -1) return 0;
  return x % y;
}
inline int64_t int_div_floor(int64_t x, int64_t y) {
  const int64_t q = int_div_trunc(x, y);
  const int64_t r = int_mod_trunc(x, y);
  return (r != 0 && ((r < 0) != (y < 0))) ? q - 1 : q;
}
inline int64_t int_mod_floor(int64_t x, int64_t y) {
  const int64_t r = int_mod_trunc(x, y);
  return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}

// The identity rounding: a result kept in its compute type.
struct NoRounding {
  template <typename C>
  C operator()(C v) const {
    return v;
  }
};

// Floor division of floats computed from fmod so that x == y * q + r holds as PyTorch defines it.
// `round` is applied after each arithmetic step: identity for float and double; for 16-bit
// results it rounds to that format, since the CPU evaluates this formula in 16-bit arithmetic.
template <typename C, typename Round = NoRounding>
inline C float_div_floor(C x, C y, Round round = {}) {
  if (y == 0) return x / y;
  const C mod = std::fmod(x, y);
  C div = round(round(x - mod) / y);
  if (mod != 0 && ((y < 0) != (mod < 0))) div = round(div - C(1));
  if (div == 0) return std::copysign(C(0), round(x / y));
  C floor_div = std::floor(div);
  if (div - floor_div > C(0.5)) floor_div = round(floor_div + C(1));
  return floor_div;
}
template <typename C>
inline C float_mod_floor(C x, C y) {
  C mod = std::fmod(x, y);
  if (mod != 0 && ((y < 0) != (mod < 0))) mod += y;
  return mod;
}

// Integer power by squaring; negative exponents give 0 except for bases 1 and -1.
inline int64_t int_pow(int64_t base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exponent & 1) ? -1 : 1;
    return 0;
  }
  int64_t result = 1;
  while (exponent) {
    if (exponent & 1) result = wrap_mul(result, base);
    exponent >>= 1;
    base = wrap_mul(base, base);
  }
  return result;
}

// fp32 tanh that vectorizes (libm's tanhf does not): an odd polynomial near 0 (Cephes tanhf
// coefficients), 1 - 2 / (e^2|x| + 1) elsewhere; a few ulp. Double uses libm.
template <typename C>
inline C fast_tanh(C x) {
  if constexpr (std::is_same_v<C, float>) {
    const float a = std::fabs(x);
    const float z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    const float small = x + x * z * p;
    const float large = std::copysign(1.0f - 2.0f / (vector_exp(2.0f * a) + 1.0f), x);
    return a < 0.625f ? small : large;
  } else {
    return std::tanh(x);
  }
}

// fp32 erf that vectorizes (libm's erff does not), for gelu: Abramowitz & Stegun 7.1.26,
// 1 - t (a1 + a2 t + ... + a5 t^4) e^-x^2 with t = 1 / (1 + p|x|); absolute error below 1.5e-7,
// the same approximation PyTorch's vectorized CPU kernels use. Double uses libm.
template <typename C>
inline C fast_erf(C x) {
  if constexpr (std::is_same_v<C, float>) {
    const float a = std::fabs(x);
    const float t = 1.0f / (1.0f + 0.3275911f * a);
    float r = 1.061405429f;
    r = r * t - 1.453152027f;
    r = r * t + 1.421413741f;
    r = r * t - 0.284496736f;
    r = r * t + 0.254829592f;
    return std::copysign(1.0f - r * t * vector_exp(-x * x), x);
  } else {
    return std::erf(x);
  }
}

template <typename C>
inline C sigmoid(C x) {
  return C(1) / (C(1) + fast_exp(-x));
}

}  // namespace openneuron::kernels::pointwise_detail
