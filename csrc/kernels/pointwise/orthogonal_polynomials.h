// Classical orthogonal polynomials P_n(x) of torch.special (Chebyshev T, U, V, W and their
// shifted forms, Hermite H and He, Laguerre L, Legendre P) by their three-term recurrences;
// Chebyshev's inside (-1, 1) above a degree by the trigonometric form. Evaluated in the type T the
// CPU uses for the dtype (float for float32), so a recurrence that overflows ends in the same
// inf or NaN as the CPU's.
// Degrees follow PyTorch: n truncated to an integer, 0 for a negative (or NaN) degree.
// Private to the kernel library.
#pragma once

#include <cmath>
#include <cstdint>

namespace openneuron::kernels::special {

enum class OrthogonalFamily {
  ChebyshevT,
  ChebyshevU,
  ChebyshevV,
  ChebyshevW,
  HermiteH,
  HermiteHe,
  LaguerreL,
  LegendreP,
};

namespace polynomial_detail {

// The degree as PyTorch's kernels read it from a floating tensor: truncated; NaN and values
// past int64 become a negative degree, as x86's conversion makes them.
template <typename T>
int64_t degree(T n) {
  if (!(n > T(-9.2e18) && n < T(9.2e18))) return -1;
  return static_cast<int64_t>(n);
}

// The degree above which PyTorch's kernels take the trigonometric form inside (-1, 1) (below
// it, the recurrence): the two agree in exact arithmetic but round differently near +-1.
inline int64_t trigonometric_above(OrthogonalFamily kind, bool shifted) {
  if (kind == OrthogonalFamily::ChebyshevT) return 6;
  if (!shifted) return 8;
  return kind == OrthogonalFamily::ChebyshevW ? 4 : 6;
}

// Chebyshev polynomials of the four kinds: each satisfies P_{k+1} = 2x P_k - P_{k-1} and
// differs only in P_1 (x, 2x, 2x - 1, 2x + 1), in its values at +-1 and in its trigonometric
// form with theta = acos(x), taken for degrees above `trig_above`.
template <typename T>
T chebyshev(OrthogonalFamily kind, T x, int64_t n, int64_t trig_above) {
  if (n < 0) return 0;
  const bool odd = n % 2 == 1;
  const T one_at_minus = odd ? T(-1) : T(1);  // (-1)^n
  const T nd = static_cast<T>(n);
  if (std::fabs(x) == 1) {
    switch (kind) {
      case OrthogonalFamily::ChebyshevT:
        return x > 0 ? T(1) : one_at_minus;
      case OrthogonalFamily::ChebyshevU:
        return (x > 0 ? T(1) : one_at_minus) * (nd + 1);
      case OrthogonalFamily::ChebyshevV:
        return x > 0 ? T(1) : one_at_minus * (2 * nd + 1);
      default:
        return x > 0 ? 2 * nd + 1 : one_at_minus;
    }
  }
  if (n > trig_above && std::fabs(x) < 1) {
    const T theta = std::acos(x);
    switch (kind) {
      case OrthogonalFamily::ChebyshevT:
        return std::cos(nd * theta);
      case OrthogonalFamily::ChebyshevU:
        return std::sin((nd + 1) * theta) / std::sin(theta);
      case OrthogonalFamily::ChebyshevV:
        return std::cos((nd + T(0.5)) * theta) / std::cos(theta / 2);
      default:
        return std::sin((nd + T(0.5)) * theta) / std::sin(theta / 2);
    }
  }
  T previous = 1;
  if (n == 0) return previous;
  T current = kind == OrthogonalFamily::ChebyshevT   ? x
              : kind == OrthogonalFamily::ChebyshevU ? x + x
              : kind == OrthogonalFamily::ChebyshevV ? x + x - 1
                                                     : x + x + 1;
  for (int64_t k = 1; k < n; ++k) {
    const T next = (x + x) * current - previous;
    previous = current;
    current = next;
  }
  return current;
}

}  // namespace polynomial_detail

// P_n(x) of `family` with n read from a floating value as PyTorch reads it; the shifted Chebyshev
// polynomials are these at 2x - 1 (`shifted`).
template <typename T>
T orthogonal_polynomial(OrthogonalFamily family, bool shifted, T x, T degree_value) {
  const int64_t n = polynomial_detail::degree(degree_value);
  if (n < 0) return 0;
  switch (family) {
    case OrthogonalFamily::ChebyshevT:
    case OrthogonalFamily::ChebyshevU:
    case OrthogonalFamily::ChebyshevV:
    case OrthogonalFamily::ChebyshevW:
      return polynomial_detail::chebyshev<T>(
          family, shifted ? x + x - 1 : x, n,
          polynomial_detail::trigonometric_above(family, shifted));
    default:
      break;
  }
  if (n == 0) return 1;
  T previous = 1, current = 0;
  switch (family) {
    case OrthogonalFamily::HermiteH:  // H_{k+1} = 2x H_k - 2k H_{k-1}
      current = x + x;
      for (int64_t k = 1; k < n; ++k) {
        const T next = (x + x) * current - T(2) * static_cast<T>(k) * previous;
        previous = current;
        current = next;
      }
      return current;
    case OrthogonalFamily::HermiteHe:  // He_{k+1} = x He_k - k He_{k-1}
      current = x;
      for (int64_t k = 1; k < n; ++k) {
        const T next = x * current - static_cast<T>(k) * previous;
        previous = current;
        current = next;
      }
      return current;
    case OrthogonalFamily::LaguerreL:  // (k+1) L_{k+1} = (2k + 1 - x) L_k - k L_{k-1}
      if (x == 0) return 1;
      current = 1 - x;
      for (int64_t k = 1; k < n; ++k) {
        const T kd = static_cast<T>(k);
        const T next = ((2 * kd + 1 - x) * current - kd * previous) / (kd + 1);
        previous = current;
        current = next;
      }
      return current;
    default: {  // Legendre: (k+1) P_{k+1} = (2k + 1) x P_k - k P_{k-1}
      if (std::fabs(x) == 1) return (x > 0 || n % 2 == 0) ? T(1) : T(-1);
      current = x;
      for (int64_t k = 1; k < n; ++k) {
        const T kd = static_cast<T>(k);
        const T next = ((2 * kd + 1) * x * current - kd * previous) / (kd + 1);
        previous = current;
        current = next;
      }
      return current;
    }
  }
}

}  // namespace openneuron::kernels::special
