// Bessel functions of the first and second kind (orders 0 and 1), modified Bessel functions of
// the second kind (plain and exp-scaled), the spherical Bessel j0 and the Airy function Ai, in
// double precision, with PyTorch's values at 0, the infinities and outside the domain.
// Private to the kernel library.
#pragma once

#include <cmath>
#include <limits>

#include "kernels/pointwise/special_functions.h"

namespace openneuron::kernels::special {

namespace bessel_detail {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace bessel_detail

// J0, J1, Y0, Y1 (libm's): NaN at +-inf (as PyTorch's kernels, whose asymptotic forms take the
// cosine of infinity); Y is -inf at 0 and NaN below it.
inline double bessel_j0(double x) { return std::isinf(x) ? bessel_detail::kNaN : ::j0(x); }
inline double bessel_j1(double x) { return std::isinf(x) ? bessel_detail::kNaN : ::j1(x); }
inline double bessel_y0(double x) {
  if (std::isinf(x) || x < 0) return bessel_detail::kNaN;
  return x == 0 ? -bessel_detail::kInf : ::y0(x);
}
inline double bessel_y1(double x) {
  if (std::isinf(x) || x < 0) return bessel_detail::kNaN;
  return x == 0 ? -bessel_detail::kInf : ::y1(x);
}

// exp(x) K_nu(x) for x > 700, where K underflows before the scaling: the large-argument series
// sqrt(pi / 2x) sum_k a_k / x^k with a_k = prod_{j<=k} (4 nu^2 - (2j-1)^2) / (k! 8^k).
inline double scaled_bessel_k_asymptotic(double nu, double x) {
  const double mu = 4 * nu * nu;
  double term = 1, sum = 1;
  for (int k = 1; k < 30; ++k) {
    const double odd = 2.0 * k - 1;
    term *= (mu - odd * odd) / (8.0 * k * x);
    sum += term;
    if (std::fabs(term) < 1e-17 * std::fabs(sum)) break;
  }
  return sum * std::sqrt(kPi / (2 * x));
}

// K_nu(x) for nu 0 or 1 (exp(x) K_nu(x) when `scaled`): +inf at 0, NaN below 0, 0 at +inf.
inline double bessel_k(double nu, double x, bool scaled) {
  if (std::isnan(x) || x < 0) return bessel_detail::kNaN;
  if (x == 0) return bessel_detail::kInf;
  if (std::isinf(x)) return 0;
  if (!scaled) return x > 750 ? 0.0 : std::cyl_bessel_k(nu, x);
  return x > 700 ? scaled_bessel_k_asymptotic(nu, x) : std::exp(x) * std::cyl_bessel_k(nu, x);
}

// j0(x) = sin(x) / x: 1 at 0 (its series near 0), 0 at +-inf.
inline double spherical_bessel_j0(double x) {
  if (std::isinf(x)) return 0;
  if (std::fabs(x) < 1e-4) return 1 - x * x / 6;
  return std::sin(x) / x;
}

// Airy Ai(x): its Maclaurin series for |x| <= 2, else through Bessel functions of order 1/3 of
// zeta = (2/3)|x|^(3/2): Ai(x) = sqrt(x/3)/pi K_1/3(zeta) above, and
// Ai(-x) = sqrt(x)/2 (J_1/3(zeta) - Y_1/3(zeta)/sqrt(3)) below. NaN at +-inf.
inline double airy_ai(double x) {
  if (std::isnan(x) || std::isinf(x)) return bessel_detail::kNaN;
  if (std::fabs(x) <= 2) {
    // Ai(x) = Ai(0) f(x) + Ai'(0) g(x), f = sum 3^k (1/3)_k x^3k / (3k)!,
    // g = sum 3^k (2/3)_k x^(3k+1) / (3k+1)!; each term follows from the one before.
    const double ai0 = 0.355028053887817239260;
    const double ai0_slope = -0.258819403792806798405;
    const double cube = x * x * x;
    double f_term = 1, g_term = x, f = 1, g = x;
    for (int k = 1; k < 60; ++k) {
      f_term *= cube / ((3.0 * k - 1) * (3.0 * k));
      g_term *= cube / ((3.0 * k) * (3.0 * k + 1));
      f += f_term;
      g += g_term;
      if (std::fabs(f_term) + std::fabs(g_term) < 1e-18 * (std::fabs(f) + std::fabs(g))) break;
    }
    return ai0 * f + ai0_slope * g;
  }
  const double third = 1.0 / 3;
  const double a = std::fabs(x);
  const double zeta = 2.0 / 3 * a * std::sqrt(a);
  if (x > 0) return zeta > 745 ? 0.0 : std::sqrt(a / 3) / kPi * std::cyl_bessel_k(third, zeta);
  return std::sqrt(a) / 2 *
         (std::cyl_bessel_j(third, zeta) - std::cyl_neumann(third, zeta) / std::sqrt(3.0));
}

}  // namespace openneuron::kernels::special
