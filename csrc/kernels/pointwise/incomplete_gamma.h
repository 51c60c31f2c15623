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

}  // namespace incomplete_gamma_detail

// P(a, x) (or Q(a, x) when `upper`): NaN for a or x below 0, NaN at a = x = 0 and where both are
// infinite; P = 1 at a = 0 < x and at x = +inf, P = 0 at x = 0 and at a = +inf.
inline double regularized_gamma(double a, double x, bool upper) {
  if (std::isnan(a) || std::isnan(x) || a < 0 || x < 0) {
    return std::numeric_limits<double>::quiet_NaN();
  }
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
