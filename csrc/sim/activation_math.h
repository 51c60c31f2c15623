// The fp32 elementary functions behind the activation table (exp, log, tanh, erf, atan, sin,
// cos), written without branches, table lookups or library calls so that loops over them
// vectorise, and so that the reference interpreter and the fast executor, both calling them,
// agree bit for bit on every ISA. Each is within a few float32 epsilons of the exact value;
// activation_accuracy_test.cpp bounds each against float64. Polynomial coefficients are
// least-squares fits on Chebyshev nodes (relative error weighted), rounded to float.
// Always inlined: an outlined call per element keeps the activation loops scalar.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace openneuron::sim {

#define OPENNEURON_SIM_INLINE __attribute__((always_inline)) inline

OPENNEURON_SIM_INLINE uint32_t float_bits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  return bits;
}

OPENNEURON_SIM_INLINE float bits_float(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof(x));
  return x;
}

// The float with value 2^n, for -126 ≤ n ≤ 127. Shifted as unsigned: a NaN input's n is out of
// that range (its result is discarded), and shifting a negative int is undefined.
OPENNEURON_SIM_INLINE float power_of_two(int32_t n) {
  return bits_float(static_cast<uint32_t>(n + 127) << 23);
}

// e^x to about 2 epsilons: x = n·ln2 + r with |r| ≤ ln2/2, e^r by a degree-6 polynomial, then
// 2^n applied in two halves so results near overflow and underflow round like any product.
OPENNEURON_SIM_INLINE float exp_f32(float x) {
  // Comparisons rather than fmin/fmax (library calls that keep loops scalar); NaN passes
  // through both and is restored at the end.
  float clamped = x < -104.0f ? -104.0f : x;
  clamped = clamped > 88.8f ? 88.8f : clamped;
  // Round to the nearest integer by adding and removing 1.5 * 2^23.
  const float n = (clamped * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = std::fma(n, -0.693145751953125f, clamped);  // ln2 split in two for exactness
  r = std::fma(n, -1.428606765330187045e-06f, r);
  float p = 1.0f / 720.0f;
  p = std::fma(p, r, 1.0f / 120.0f);
  p = std::fma(p, r, 1.0f / 24.0f);
  p = std::fma(p, r, 1.0f / 6.0f);
  p = std::fma(p, r, 0.5f);
  p = std::fma(p, r, 1.0f);
  p = std::fma(p, r, 1.0f);
  const auto whole = static_cast<int32_t>(n);
  const int32_t half = whole >> 1;
  const float result = p * power_of_two(half) * power_of_two(whole - half);
  return x != x ? x : result;
}

// log(m) + e·ln2 for m in [√½, √2): with f = m - 1 (exact) and s = f / (2 + f),
// log(1 + f) = f - f²/2 + s·(f²/2 + R(s²)), so the rounding errors land on small terms only.
OPENNEURON_SIM_INLINE float log_reduced(float m, float e) {
  const float f = m - 1.0f;
  const float s = f / (2.0f + f);
  const float z = s * s;
  float r = 0.19569987058639526f;
  r = std::fma(r, z, 0.22177234292030334f);
  r = std::fma(r, z, 0.2857208251953125f);
  r = std::fma(r, z, 0.3999999463558197f);
  r = std::fma(r, z, 0.6666666865348816f);
  r *= z;
  const float half_square = 0.5f * f * f;
  const float tail = std::fma(s, half_square + r, e * 1.428606765330187045e-06f);
  return std::fma(e, 0.693145751953125f, f - (half_square - tail));
}

// Natural log to about 1 epsilon; subnormals are scaled up first; log(0) = -inf, log of a
// negative number NaN, log(inf) = inf.
OPENNEURON_SIM_INLINE float log_f32(float x) {
  const bool tiny = x < 1.17549435e-38f;
  const float scaled = tiny ? x * 8388608.0f : x;  // 2^23
  const uint32_t bits = float_bits(scaled);
  int32_t e = static_cast<int32_t>(bits >> 23) - (tiny ? 127 + 23 : 127);
  float m = bits_float((bits & 0x007FFFFFu) | 0x3F800000u);  // in [1, 2)
  const bool high = m > 1.41421356f;
  m = high ? m * 0.5f : m;
  e = high ? e + 1 : e;
  const float result = log_reduced(m, static_cast<float>(e));
  const float inf = __builtin_inff();
  float special = x == 0.0f ? -inf : __builtin_nanf("");
  special = x == inf ? inf : special;
  return x > 0.0f && x < inf ? result : (x != x ? x : special);
}

// log(1 + u) for u ≥ 0: log of the rounded w = 1 + u, corrected by the part of u that w lost.
OPENNEURON_SIM_INLINE float log1p_f32(float u) {
  const float w = 1.0f + u;
  const float lost = (u - (w - 1.0f)) / w;
  return log_f32(w) + lost;
}

// softplus(x) = log(1 + e^x) = max(x, 0) + log(1 + e^-|x|), which neither overflows nor loses
// the small values of negative x.
OPENNEURON_SIM_INLINE float softplus_f32(float x) {
  const float magnitude = std::fabs(x);
  const float positive = x > 0.0f ? x : 0.0f;
  const float result = positive + log1p_f32(exp_f32(-magnitude));
  return x != x ? x : result;
}

// tanh: an odd polynomial for |x| < 0.625, else 1 - 2 / (e^2|x| + 1) (exp_f32 saturates, so
// large |x| and infinities give ±1), with the sign of x.
OPENNEURON_SIM_INLINE float tanh_f32(float x) {
  const float a = std::fabs(x);
  const float z = x * x;
  float p = 0.00214899098500609f;
  p = std::fma(p, z, -0.00818466953933239f);
  p = std::fma(p, z, 0.02170400321483612f);
  p = std::fma(p, z, -0.05394745618104935f);
  p = std::fma(p, z, 0.13333211839199066f);
  p = std::fma(p, z, -0.3333333134651184f);
  const float small = std::fma(p * z, a, a);
  const float large = 1.0f - 2.0f / (exp_f32(2.0f * a) + 1.0f);
  const float magnitude = a < 0.625f ? small : large;
  return x != x ? x : bits_float(float_bits(magnitude) | (float_bits(x) & 0x80000000u));
}

// mish(x) = x·tanh(softplus(x)) = x·n / (n + 2) with n = e^x (e^x + 2): no cancellation; x
// itself once tanh rounds to 1.
OPENNEURON_SIM_INLINE float mish_f32(float x) {
  const float u = exp_f32(x);
  const float n = u * (u + 2.0f);
  const float result = x * (n / (n + 2.0f));
  return x > 20.0f ? x : result;
}

// erf: x·P(x²) for |x| < 1 (the leading coefficient 2/√π in two parts), else
// 1 - e^-x²·R(1/|x|) with R fitted to erfc(x)·e^x² on [1, 4]; erf rounds to ±1 beyond 4.
OPENNEURON_SIM_INLINE float erf_f32(float x) {
  float a = std::fabs(x);
  a = a > 4.0f ? 4.0f : a;
  const float z = x * x;
  float p = -9.709341611596756e-06f;
  p = std::fma(p, z, 0.00011282077321084216f);
  p = std::fma(p, z, -0.0008486536680720747f);
  p = std::fma(p, z, 0.005221222061663866f);
  p = std::fma(p, z, -0.026865510269999504f);
  p = std::fma(p, z, 0.11283784359693527f);
  p = std::fma(p, z, -0.37612637877464294f);
  p = std::fma(p, z, -5.8635382771399236e-08f);
  const float small = std::fma(x, 1.128379225730896f, x * p);
  const float t = 1.0f / a;
  float q = -0.01830393262207508f;
  q = std::fma(q, t, 0.1214786097407341f);
  q = std::fma(q, t, -0.3526085615158081f);
  q = std::fma(q, t, 0.5699609518051147f);
  q = std::fma(q, t, -0.49916550517082214f);
  q = std::fma(q, t, 0.047169193625450134f);
  q = std::fma(q, t, 0.5588247776031494f);
  q = std::fma(q, t, 0.00022802656167186797f);
  const float large = 1.0f - exp_f32(-(a * a)) * q;
  const float signed_large = bits_float(float_bits(large) | (float_bits(x) & 0x80000000u));
  return a < 1.0f ? small : (x != x ? x : signed_large);
}

// atan: |x| reduced to z in [-tan(π/8), tan(π/8)] (z = |x|, (|x| - 1) / (|x| + 1) around π/4,
// or -1/|x| beyond π/2 - π/8), z + z³·P(z²), plus the base angle in two parts, signed as x.
OPENNEURON_SIM_INLINE float atan_f32(float x) {
  const float a = std::fabs(x);
  const bool middle = a > 0.41421356f, far = a > 2.41421356f;
  float z = middle ? (a - 1.0f) / (a + 1.0f) : a;
  z = far ? -1.0f / a : z;
  const float base_high = far ? 1.57079637f : (middle ? 0.785398185f : 0.0f);
  const float base_low = far ? -4.37113883e-08f : (middle ? -2.18556941e-08f : 0.0f);
  const float w = z * z;
  float p = 0.04756846651434898f;
  p = std::fma(p, w, -0.08483025431632996f);
  p = std::fma(p, w, 0.1104603260755539f);
  p = std::fma(p, w, -0.1428213119506836f);
  p = std::fma(p, w, 0.19999909400939941f);
  p = std::fma(p, w, -0.3333333134651184f);
  const float result = base_high + (std::fma(p * w, z, z) + base_low);
  return x != x ? x : bits_float(float_bits(result) | (float_bits(x) & 0x80000000u));
}

// Whether sin_cos_f32 reduces |x| exactly enough: up to 2^24 (floats beyond are integers whose
// reduction modulo π/2 needs more bits of π); larger and infinite x take libm's sinf/cosf.
OPENNEURON_SIM_INLINE bool sin_cos_reducible(float x) { return std::fabs(x) < 16777216.0f; }

// sin x (cosine false) or cos x for sin_cos_reducible x, in double: x = n·π/2 + r with π/2 in
// two parts (|r| ≤ π/4, error far below a float's), Taylor polynomials of sin r and cos r,
// chosen and signed by n mod 4, then rounded once to float: within an epsilon of the exact.
OPENNEURON_SIM_INLINE float sin_cos_f32(float x, bool cosine) {
  const double d = static_cast<double>(x);
  const double shifted = std::fma(d, 0.63661977236758134, 6755399441055744.0);  // 1.5 · 2^52
  const double n = shifted - 6755399441055744.0;
  double r = std::fma(n, -1.5707963267948966, d);
  r = std::fma(n, -6.123233995736766e-17, r);
  int64_t quadrant_bits;
  std::memcpy(&quadrant_bits, &shifted, sizeof(quadrant_bits));
  const int64_t quadrant = (quadrant_bits + (cosine ? 1 : 0)) & 3;
  const double w = r * r;
  double s = 1.0 / 6227020800.0;  // 1/13!
  s = std::fma(s, -w, 1.0 / 39916800.0);
  s = std::fma(s, -w, 1.0 / 362880.0);
  s = std::fma(s, -w, 1.0 / 5040.0);
  s = std::fma(s, -w, 1.0 / 120.0);
  s = std::fma(s, -w, 1.0 / 6.0);
  s = std::fma(s * -w, r, r);
  double c = 1.0 / 87178291200.0;  // 1/14!
  c = std::fma(c, -w, 1.0 / 479001600.0);
  c = std::fma(c, -w, 1.0 / 3628800.0);
  c = std::fma(c, -w, 1.0 / 40320.0);
  c = std::fma(c, -w, 1.0 / 720.0);
  c = std::fma(c, -w, 1.0 / 24.0);
  c = std::fma(c, -w, 0.5);
  c = std::fma(c, -w, 1.0);
  // cos x = sin(x + π/2): quadrant q gives sin r, cos r, -sin r, -cos r.
  const double value = (quadrant & 1) ? c : s;
  return static_cast<float>((quadrant & 2) ? -value : value);
}

}  // namespace openneuron::sim
