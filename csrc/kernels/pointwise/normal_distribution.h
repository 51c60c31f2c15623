// The standard normal distribution's log-CDF and inverse CDF (torch.special.log_ndtr, ndtri)
// in double precision, accurate in both tails. Private to the kernel library.
#pragma once

#include <cmath>
#include <limits>

#include "kernels/pointwise/special_functions.h"

namespace openneuron::kernels::special {

// log(Phi(x)). Below -1 through the scaled erfc, so the far left tail keeps its digits
// (log Phi(x) = log(erfcx(-x/sqrt2) / 2) - x^2/2); above, log1p of the upper tail's mass.
inline double log_ndtr(double x) {
  const double inv_sqrt2 = 0.70710678118654752440;
  if (x < -1) return std::log(erfcx(-x * inv_sqrt2) / 2) - x * x / 2;
  return std::log1p(-std::erfc(x * inv_sqrt2) / 2);
}

// Phi^-1(p): NaN outside [0, 1], -inf at 0, +inf at 1. A rational first guess for the lower
// tail q = min(p, 1 - p) (Abramowitz and Stegun 26.2.23), then Halley steps on
// Phi(x) = erfc(-x/sqrt2)/2 = q, which keep the tail's relative precision.
inline double ndtri(double p) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (std::isnan(p) || p < 0 || p > 1) return std::numeric_limits<double>::quiet_NaN();
  if (p == 0) return -inf;
  if (p == 1) return inf;
  if (p == 0.5) return 0;
  const double q = p < 0.5 ? p : 1 - p;
  const double t = std::sqrt(-2 * std::log(q));
  double x = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t) /
                       (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t));
  const double inv_sqrt2 = 0.70710678118654752440;
  const double sqrt_2pi = 2.50662827463100050242;
  for (int step = 0; step < 8; ++step) {
    const double density = std::exp(-x * x / 2) / sqrt_2pi;
    if (density == 0) break;
    const double u = (std::erfc(-x * inv_sqrt2) / 2 - q) / density;
    const double dx = u / (1 + x * u / 2);
    x -= dx;
    if (std::fabs(dx) <= 1e-16 * std::fabs(x)) break;
  }
  return p < 0.5 ? x : -x;
}

}  // namespace openneuron::kernels::special
