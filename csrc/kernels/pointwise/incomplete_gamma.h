// The regularized incomplete gamma functions P(a, x) (torch.igamma) and Q(a, x) = 1 - P
// (torch.igammac) in double precision, with PyTorch's values at the edges of the domain.
// Private to the kernel library.
#pragma once

#include <cmath>
#include <limits>

namespace openneuron::kernels::special {

namespace incomplete_gamma_detail {

// x^a e^-x / Gamma(a), the factor both expansions share, formed in logs.
inline double prefactor(double a, double x) {
  int sign = 0;
  return std::exp(a * std::log(x) - x - ::lgamma_r(a, &sign));
}

// P(a, x) by its power series, for x < a + 1: sum_n x^n / (a (a+1) ... (a+n)) times the factor.
inline double lower_series(double a, double x) {
  double term = 1 / a, sum = term;
  for (int n = 1; n < 100000; ++n) {
    term *= x / (a + n);
    sum += term;
    if (std::fabs(term) < 1e-17 * std::fabs(sum)) break;
  }
  return sum * prefactor(a, x);
}

// Q(a, x) by its continued fraction, for x >= a + 1, evaluated with the modified Lentz method:
// 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / (x + 5 - a - ...))).
inline double upper_fraction(double a, double x) {
  constexpr double tiny = 1e-300;
  double b = x + 1 - a;
  double c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 100000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < 1e-16) break;
  }
  return h * prefactor(a, x);
}

// Q(a, x) for large a (>= 1e6) by the leading term of Temme's uniform expansion, where the
// series and the fraction would need ~sqrt(a) steps and the prefactor loses its digits:
// Q = erfc(eta sqrt(a/2)) / 2 + exp(-a d) / sqrt(2 pi a) c0(eta), with lambda = x / a,
// d = lambda - 1 - ln(lambda), eta = sign(lambda - 1) sqrt(2 d), c0 = 1/(lambda - 1) - 1/eta.
// The terms left out are O(1/a) of the second one.
inline double upper_uniform(double a, double x) {
  const double mu = (x - a) / a;  // lambda - 1
  // d by its series near lambda = 1, where mu - log1p(mu) cancels.
  const double d = std::fabs(mu) < 1e-4 ? mu * mu * (0.5 - mu * (1.0 / 3 - mu * (0.25 - mu / 5)))
                                        : mu - std::log1p(mu);
  const double eta = std::copysign(std::sqrt(2 * d), mu);
  // c0 by its Taylor series in eta near 0 (DLMF 8.12.10), where 1/mu - 1/eta cancels.
  const double c0 =
      std::fabs(eta) < 1e-3 ? -1.0 / 3 + eta / 12 - 2 * eta * eta / 135 : 1 / mu - 1 / eta;
  const double sqrt_2pi = 2.50662827463100050242;
  return std::erfc(eta * std::sqrt(a / 2)) / 2 + std::exp(-a * d) / (sqrt_2pi * std::sqrt(a)) * c0;
}

}  // namespace incomplete_gamma_detail

// P(a, x) (or Q(a, x) when `upper`): NaN for a or x below 0, NaN at a = x = 0 and where both are
// infinite; P = 1 at a = 0 < x and at x = +inf, P = 0 at x = 0 and at a = +inf.
inline double regularized_gamma(double a, double x, bool upper) {
  // The checks in PyTorch's order, a NaN falling through them (P(inf, NaN) = 0 there).
  if (a < 0 || x < 0) return std::numeric_limits<double>::quiet_NaN();
  double lower;
  if (a == 0) {
    if (x == 0) return std::numeric_limits<double>::quiet_NaN();
    lower = 1;
  } else if (x == 0) {
    lower = 0;
  } else if (std::isinf(a)) {
    if (std::isinf(x)) return std::numeric_limits<double>::quiet_NaN();
    lower = 0;
  } else if (std::isinf(x)) {
    lower = 1;
  } else if (a >= 1e6) {
    const double q = incomplete_gamma_detail::upper_uniform(a, x);
    return upper ? q : 1 - q;
  } else if (x < a + 1) {
    const double p = incomplete_gamma_detail::lower_series(a, x);
    return upper ? 1 - p : p;
  } else {
    const double q = incomplete_gamma_detail::upper_fraction(a, x);
    return upper ? q : 1 - q;
  }
  return upper ? 1 - lower : lower;
}

}  // namespace openneuron::kernels::special
