// Special functions in double precision for the pointwise kernels: gamma family, modified
// Bessel functions, inverse error function, scaled complementary error function. Float and
// 16-bit results are computed here and rounded once. Private to the kernel library.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace openneuron::kernels::special {

constexpr double kPi = 3.14159265358979323846;

// log|Gamma(x)|, thread-safe (lgamma's sign goes to a local, not the global signgam).
inline double log_gamma(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);
}

// Digamma psi(x): pole at 0 signed like PyTorch (-inf at +0, +inf at -0), NaN at negative
// integers, reflection for x < 0, recurrence up to x >= 10, then the asymptotic series.
inline double digamma(double x) {
  if (x == 0) return std::copysign(std::numeric_limits<double>::infinity(), -x);
  if (std::isnan(x) || x == std::numeric_limits<double>::infinity()) return x;
  if (x < 0) {
    if (x == std::floor(x)) return std::numeric_limits<double>::quiet_NaN();
    // psi(x) = psi(1 - x) - pi / tan(pi x); tan has period pi, so only x's fraction matters.
    const double fraction = x - std::floor(x);
    return digamma(1 - x) - kPi / std::tan(kPi * fraction);
  }
  double result = 0;
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  // psi(x) ~ ln x - 1/(2x) - sum B_2k / (2k x^2k), Bernoulli numbers B_2 .. B_14.
  const double inv2 = 1 / (x * x);
  const double series =
      inv2 *
      (1.0 / 12 -
       inv2 * (1.0 / 120 -
               inv2 * (1.0 / 252 -
                       inv2 * (1.0 / 240 -
                               inv2 * (1.0 / 132 - inv2 * (691.0 / 32760 - inv2 * (1.0 / 12)))))));
  return result + std::log(x) - 0.5 / x - series;
}

// Hurwitz zeta(s, q) = sum_k (q + k)^-s for s > 1 (integer s for polygamma): the terms up to
// q + N >= 12 summed directly, the tail by Euler-Maclaurin with Bernoulli numbers B_2 .. B_24.
// Poles (q a non-positive integer) give +inf.
inline double hurwitz_zeta(double s, double q) {
  if (q <= 0 && q == std::floor(q)) return std::numeric_limits<double>::infinity();
  static const double kBernoulli[] = {
      1.0 / 6, -1.0 / 30,     1.0 / 42,      -1.0 / 30,       5.0 / 66,       -691.0 / 2730,
      7.0 / 6, -3617.0 / 510, 43867.0 / 798, -174611.0 / 330, 854513.0 / 138, -236364091.0 / 2730};
  double sum = 0;
  double a = q;
  int terms = 0;
  while (a < 12 || terms < 9) {
    sum += std::pow(a, -s);
    a += 1;
    ++terms;
  }
  // Tail from a: a^(1-s)/(s-1) + a^-s/2 + sum_j B_2j/(2j)! s(s+1)..(s+2j-2) a^(-s-2j+1).
  const double a_pow = std::pow(a, -s);
  sum += a * a_pow / (s - 1) + 0.5 * a_pow;
  double rising = s;         // s (s+1) ... (s + 2j - 2)
  double factorial = 2;      // (2j)!
  double power = a_pow / a;  // a^(-s - 2j + 1)
  for (int j = 1; j <= 12; ++j) {
    const double term = kBernoulli[j - 1] / factorial * rising * power;
    sum += term;
    if (std::fabs(term) < 1e-17 * std::fabs(sum)) break;
    rising *= (s + 2 * j - 1) * (s + 2 * j);
    factorial *= (2.0 * j + 1) * (2.0 * j + 2);
    power /= a * a;
  }
  return sum;
}

// torch.special.zeta(x, q): the Hurwitz zeta with PyTorch's domain - +inf at x = 1, NaN below
// it, +inf at the poles q = 0, -1, ..., NaN for other q <= 0 unless x is an integer.
inline double zeta(double x, double q) {
  // The checks in PyTorch's order, NaN falling through them: zeta(NaN, -inf) is +inf there.
  if (x == 1) return std::numeric_limits<double>::infinity();
  if (x < 1) return std::numeric_limits<double>::quiet_NaN();
  if (q <= 0) {
    if (q == std::floor(q)) return std::numeric_limits<double>::infinity();
    if (x != std::floor(x)) return std::numeric_limits<double>::quiet_NaN();
  }
  return hurwitz_zeta(x, q);
}

// polygamma(n, x), n >= 0: digamma for n = 0, else (-1)^(n+1) n! zeta(n + 1, x).
inline double polygamma(int64_t n, double x) {
  if (n == 0) return digamma(x);
  if (std::isnan(x)) return x;
  // At infinities PyTorch's CPU and CUDA kernels give trigamma 0 at +inf and NaN at -inf, and
  // for n >= 2 NaN at +inf and the pole's signed infinity at -inf; so do these.
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (std::isinf(x)) {
    if (n == 1) return x > 0 ? 0.0 : std::numeric_limits<double>::quiet_NaN();
    if (x > 0) return std::numeric_limits<double>::quiet_NaN();
    return n % 2 == 1 ? inf : -inf;
  }
  if (n == 1 && x < 0.5) {
    // Trigamma by reflection, psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x), as PyTorch's kernels
    // evaluate it: a negative integer gives the huge finite value of sin's rounding, not inf.
    const double s = std::sin(kPi * x);
    return (kPi * kPi) / (s * s) - hurwitz_zeta(2, 1 - x);
  }
  const double factorial = std::tgamma(static_cast<double>(n) + 1);
  const double sign = (n % 2 == 1) ? 1.0 : -1.0;
  return sign * factorial * hurwitz_zeta(static_cast<double>(n) + 1, x);
}

// exp(-|x|) I_nu(|x|) for nu = 0 or 1 and x >= 0: the power series below 30, the asymptotic
// expansion (Hankel) above, where the series would need exp(x) before scaling.
inline double scaled_bessel_i(int nu, double x) {
  if (std::isinf(x)) return 0;
  if (x <= 30) {
    // I_nu(x) = sum_k (x/2)^(2k+nu) / (k! (k+nu)!)
    const double half = x / 2;
    double term = nu == 0 ? 1.0 : half;
    double sum = term;
    for (int k = 1; k < 500; ++k) {
      term *= half * half / (static_cast<double>(k) * (k + nu));
      sum += term;
      if (term < 1e-17 * sum) break;
    }
    return sum * std::exp(-x);
  }
  // I_nu(x) e^-x ~ 1/sqrt(2 pi x) sum_k (-1)^k a_k / x^k, a_k = prod (4nu^2 - (2j-1)^2)/(k! 8^k).
  const double mu = 4.0 * nu * nu;
  double term = 1, sum = 1;
  for (int k = 1; k < 60; ++k) {
    const double odd = 2.0 * k - 1;
    const double next = term * -(mu - odd * odd) / (8.0 * k * x);
    if (std::fabs(next) >= std::fabs(term)) break;
    term = next;
    sum += term;
    if (std::fabs(term) < 1e-17 * std::fabs(sum)) break;
  }
  return sum / std::sqrt(2 * kPi * x);
}

inline double bessel_i0e(double x) { return scaled_bessel_i(0, std::fabs(x)); }
inline double bessel_i1e(double x) { return std::copysign(scaled_bessel_i(1, std::fabs(x)), x); }
// I0 and I1 are NaN at +-inf, as PyTorch's CPU and CUDA kernels give them (their scaled
// forms are 0 there).
inline double bessel_i0(double x) {
  if (std::isnan(x) || std::isinf(x)) return std::numeric_limits<double>::quiet_NaN();
  const double a = std::fabs(x);
  return a > 720 ? std::numeric_limits<double>::infinity() : std::exp(a) * bessel_i0e(a);
}
inline double bessel_i1(double x) {
  if (std::isnan(x) || std::isinf(x)) return std::numeric_limits<double>::quiet_NaN();
  const double a = std::fabs(x);
  const double value =
      a > 720 ? std::numeric_limits<double>::infinity() : std::exp(a) * scaled_bessel_i(1, a);
  return std::copysign(value, x);
}

// erfinv(y): NaN outside [-1, 1], +-inf at +-1. A closed-form first guess (Winitzki), then
// Newton steps on erf (|y| <= 0.5) or on erfc against 1 - |y| (exact for float y), so that
// values near +-1 keep their precision.
inline double erfinv(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return std::numeric_limits<double>::quiet_NaN();
  if (y == 1 || y == -1) return std::copysign(std::numeric_limits<double>::infinity(), y);
  if (y == 0) return y;
  const double a = 0.147;
  const double ln = std::log1p(-y * y);
  const double first = 2 / (kPi * a) + ln / 2;
  const double magnitude = std::fabs(y);
  double x = std::sqrt(std::sqrt(first * first - ln / a) - first);
  const double two_over_sqrt_pi = 1.1283791670955126;
  for (int step = 0; step < 6; ++step) {
    const double slope = two_over_sqrt_pi * std::exp(-x * x);
    const double error =
        magnitude <= 0.5 ? std::erf(x) - magnitude : (1 - magnitude) - std::erfc(x);
    const double dx = error / slope;
    x -= dx;
    if (std::fabs(dx) <= 1e-16 * std::fabs(x)) break;
  }
  return std::copysign(x, y);
}

// erfcx(x) = exp(x^2) erfc(x): directly below 25, by the asymptotic series above (where erfc
// underflows); +inf where exp(x^2) overflows for large negative x.
inline double erfcx(double x) {
  if (std::isnan(x)) return x;
  if (x < 25) return std::exp(x * x) * std::erfc(x);
  // 1/(x sqrt(pi)) (1 - 1/(2x^2) + 3/(2x^2)^2 - 15/(2x^2)^3 ...)
  const double inv = 1 / (2 * x * x);
  double term = 1, sum = 1;
  for (int k = 1; k < 12; ++k) {
    term *= -(2.0 * k - 1) * inv;
    sum += term;
  }
  return sum / (x * 1.7724538509055160);
}

}  // namespace openneuron::kernels::special
