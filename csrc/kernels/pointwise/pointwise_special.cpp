// Special-function ops of kernels::pointwise (acos ... signbit; xlog1py ... logit's gradient).
// Transcendental ones are evaluated in double and rounded once to the output dtype (lgamma
// in float, as the CPU's kernel).
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "kernels/pointwise/bessel_airy.h"
#include "kernels/pointwise/incomplete_gamma.h"
#include "kernels/pointwise/normal_distribution.h"
#include "kernels/pointwise/orthogonal_polynomials.h"
#include "kernels/pointwise/pointwise_internal.h"
#include "kernels/pointwise/pointwise_map.h"
#include "kernels/pointwise/pointwise_math.h"
#include "kernels/pointwise/special_functions.h"

namespace openneuron::kernels::pointwise_detail {

namespace {

// A double-precision function applied to a float compute type, rounded once.
template <typename C, typename F>
void map_in_double(const TensorView& out, const TensorView& x, F f) {
  map<C, C>(out, std::array<TensorView, 1>{x},
            [=](C a) { return static_cast<C>(f(static_cast<double>(a))); });
}

double entropy_term(double x) {
  if (std::isnan(x)) return x;
  if (x > 0) return -x * std::log(x);
  return x == 0 ? 0.0 : -std::numeric_limits<double>::infinity();
}

double real_angle(double x) { return std::isnan(x) ? x : (x < 0 ? special::kPi : 0.0); }

template <typename C>
bool run_float_unary(PointwiseOp op, const TensorView& out, const TensorView& x,
                     const PointwiseParams& p) {
  switch (op) {
    case PointwiseOp::Acos:
      map_in_double<C>(out, x, [](double a) { return std::acos(a); });
      return true;
    case PointwiseOp::Asin:
      map_in_double<C>(out, x, [](double a) { return std::asin(a); });
      return true;
    case PointwiseOp::Atan:
      map_in_double<C>(out, x, [](double a) { return std::atan(a); });
      return true;
    case PointwiseOp::Acosh:
      map_in_double<C>(out, x, [](double a) { return std::acosh(a); });
      return true;
    case PointwiseOp::Asinh:
      map_in_double<C>(out, x, [](double a) { return std::asinh(a); });
      return true;
    case PointwiseOp::Atanh:
      map_in_double<C>(out, x, [](double a) { return std::atanh(a); });
      return true;
    case PointwiseOp::Cosh:
      map_in_double<C>(out, x, [](double a) { return std::cosh(a); });
      return true;
    case PointwiseOp::Sinh:
      map_in_double<C>(out, x, [](double a) { return std::sinh(a); });
      return true;
    case PointwiseOp::Erfc:
      map_in_double<C>(out, x, [](double a) { return std::erfc(a); });
      return true;
    case PointwiseOp::Erfinv:
      map_in_double<C>(out, x, [](double a) { return special::erfinv(a); });
      return true;
    case PointwiseOp::Erfcx:
      map_in_double<C>(out, x, [](double a) { return special::erfcx(a); });
      return true;
    case PointwiseOp::Lgamma:
      if constexpr (std::is_same_v<C, float>) {
        // libm's float lgamma, as PyTorch's CPU kernel calls it: 16-bit results round alike.
        map<C, C>(out, std::array<TensorView, 1>{x}, [](float a) {
          int sign = 0;
          return ::lgammaf_r(a, &sign);
        });
      } else {
        map_in_double<C>(out, x, [](double a) { return special::log_gamma(a); });
      }
      return true;
    case PointwiseOp::Digamma:
      map_in_double<C>(out, x, [](double a) { return special::digamma(a); });
      return true;
    case PointwiseOp::Polygamma: {
      const int64_t n = scalar_as<int64_t>(p.values[0]);
      if constexpr (std::is_same_v<C, float>) {
        if (n == 1) {
          // Trigamma's reflection term in float, as PyTorch's float kernels evaluate it: near a
          // negative integer its size follows sin's float rounding.
          map<C, C>(out, std::array<TensorView, 1>{x}, [](float a) {
            if (!(a < 0.5f)) return static_cast<float>(special::polygamma(1, a));
            const float pi = static_cast<float>(special::kPi);
            const float s = std::sin(pi * a);
            return (pi * pi) / (s * s) - static_cast<float>(special::polygamma(1, 1.0 - a));
          });
          return true;
        }
      }
      map_in_double<C>(out, x, [n](double a) { return special::polygamma(n, a); });
      return true;
    }
    case PointwiseOp::BesselI0:
      map_in_double<C>(out, x, [](double a) { return special::bessel_i0(a); });
      return true;
    case PointwiseOp::BesselI0e:
      map_in_double<C>(out, x, [](double a) { return special::bessel_i0e(a); });
      return true;
    case PointwiseOp::BesselI1:
      map_in_double<C>(out, x, [](double a) { return special::bessel_i1(a); });
      return true;
    case PointwiseOp::BesselI1e:
      map_in_double<C>(out, x, [](double a) { return special::bessel_i1e(a); });
      return true;
    case PointwiseOp::Entr:
      map_in_double<C>(out, x, entropy_term);
      return true;
    case PointwiseOp::AiryAi:
      map_in_double<C>(out, x, special::airy_ai);
      return true;
    case PointwiseOp::BesselJ0:
      map_in_double<C>(out, x, special::bessel_j0);
      return true;
    case PointwiseOp::BesselJ1:
      map_in_double<C>(out, x, special::bessel_j1);
      return true;
    case PointwiseOp::BesselY0:
      map_in_double<C>(out, x, special::bessel_y0);
      return true;
    case PointwiseOp::BesselY1:
      map_in_double<C>(out, x, special::bessel_y1);
      return true;
    case PointwiseOp::BesselK0:
    case PointwiseOp::BesselK1:
    case PointwiseOp::BesselK0e:
    case PointwiseOp::BesselK1e: {
      const double nu = (op == PointwiseOp::BesselK1 || op == PointwiseOp::BesselK1e) ? 1 : 0;
      const bool scaled = op == PointwiseOp::BesselK0e || op == PointwiseOp::BesselK1e;
      map_in_double<C>(out, x, [=](double a) { return special::bessel_k(nu, a, scaled); });
      return true;
    }
    case PointwiseOp::SphericalBesselJ0:
      map_in_double<C>(out, x, special::spherical_bessel_j0);
      return true;
    case PointwiseOp::LogNdtr:
      if constexpr (std::is_same_v<C, float>) {
        // Below -1 the CPU subtracts x^2/2 in float; so does this, so that the gradient
        // (which adds x^2/2 back) sees the same rounding.
        map<C, C>(out, std::array<TensorView, 1>{x}, [](float a) {
          if (!(a < -1.0f)) return static_cast<float>(special::log_ndtr(a));
          const double scaled_tail = std::log(special::erfcx(-a * 0.70710678118654752440) / 2);
          return static_cast<float>(scaled_tail) - a * a / 2.0f;
        });
      } else {
        map_in_double<C>(out, x, special::log_ndtr);
      }
      return true;
    case PointwiseOp::Ndtri:
      map_in_double<C>(out, x, special::ndtri);
      return true;
    case PointwiseOp::Sinc:
      map_in_double<C>(out, x, [](double a) {
        if (a == 0) return 1.0;
        const double angle = special::kPi * a;
        return std::sin(angle) / angle;
      });
      return true;
    case PointwiseOp::Angle:
      map_in_double<C>(out, x, real_angle);
      return true;
    case PointwiseOp::Logit: {
      // The bounds arrive in the input's precision (the bridge rounds them for 16-bit inputs).
      const std::array<TensorView, 1> in{x};
      if (!p.present[0]) {
        map<C, C>(out, in, [](C a) { return std::log(a / (C(1) - a)); });
      } else {
        const C lo = scalar_as<C>(p.values[0]);
        const C hi = p.present[1] ? scalar_as<C>(p.values[1]) : C(1) - lo;
        map<C, C>(out, in, [=](C a) {
          const C z = a < lo ? lo : (a > hi ? hi : a);
          return std::log(z / (C(1) - z));
        });
      }
      return true;
    }
    default:
      return false;
  }
}

// Euclid's algorithm on |a| and |b| (integers widened to int64, so |a| does not wrap).
template <typename C>
C euclid_gcd(C a, C b) {
  a = a < 0 ? -a : a;
  b = b < 0 ? -b : b;
  while (a != 0) {
    const C rest = b % a;
    b = a;
    a = rest;
  }
  return b;
}

// The family of an orthogonal-polynomial op, and whether it is the shifted (2x - 1) form.
std::pair<special::OrthogonalFamily, bool> polynomial_of(PointwiseOp op) {
  using special::OrthogonalFamily;
  switch (op) {
    case PointwiseOp::ChebyshevT:
      return {OrthogonalFamily::ChebyshevT, false};
    case PointwiseOp::ShiftedChebyshevT:
      return {OrthogonalFamily::ChebyshevT, true};
    case PointwiseOp::ChebyshevU:
      return {OrthogonalFamily::ChebyshevU, false};
    case PointwiseOp::ShiftedChebyshevU:
      return {OrthogonalFamily::ChebyshevU, true};
    case PointwiseOp::ChebyshevV:
      return {OrthogonalFamily::ChebyshevV, false};
    case PointwiseOp::ShiftedChebyshevV:
      return {OrthogonalFamily::ChebyshevV, true};
    case PointwiseOp::ChebyshevW:
      return {OrthogonalFamily::ChebyshevW, false};
    case PointwiseOp::ShiftedChebyshevW:
      return {OrthogonalFamily::ChebyshevW, true};
    case PointwiseOp::HermiteH:
      return {OrthogonalFamily::HermiteH, false};
    case PointwiseOp::HermiteHe:
      return {OrthogonalFamily::HermiteHe, false};
    case PointwiseOp::LaguerreL:
      return {OrthogonalFamily::LaguerreL, false};
    default:
      return {OrthogonalFamily::LegendreP, false};
  }
}

// std::nextafter for a 16-bit float format, on its bits: from zero the smallest subnormal with
// the target's sign, else one step of the magnitude towards the target.
template <typename Narrow>
float next_narrow(float from, float to) {
  if (std::isnan(from) || std::isnan(to)) return from + to;
  if (from == to) return to;
  uint16_t bits = narrow_from_float<Narrow>(from).bits;
  if (from == 0.0f) {
    bits = std::signbit(to) ? 0x8001 : 0x0001;
  } else if ((from < to) == (from > 0.0f)) {
    ++bits;
  } else {
    --bits;
  }
  return narrow_to_float(Narrow{bits});
}

template <typename C>
bool run_binary(PointwiseOp op, const TensorView& out, const std::array<TensorView, 2>& in,
                const PointwiseParams& p) {
  switch (op) {
    case PointwiseOp::Fmax:
      map<C, C>(out, in, [](C a, C b) {
        if (is_nan(a)) return b;
        if (is_nan(b)) return a;
        return a < b ? b : a;
      });
      return true;
    case PointwiseOp::Fmin:
      map<C, C>(out, in, [](C a, C b) {
        if (is_nan(a)) return b;
        if (is_nan(b)) return a;
        return b < a ? b : a;
      });
      return true;
    case PointwiseOp::Heaviside:
      map<C, C>(out, in, [](C a, C b) { return a == C(0) ? b : C(a > C(0)); });
      return true;
    default:
      break;
  }
  if (op == PointwiseOp::Zeta || (op >= PointwiseOp::ChebyshevT && op <= PointwiseOp::LegendreP)) {
    if constexpr (std::is_floating_point_v<C>) {
      if (op == PointwiseOp::Zeta) {
        // zeta in double; the polynomials in C, the type the CPU evaluates them in.
        map<C, C>(out, in, [](C a, C b) { return static_cast<C>(special::zeta(a, b)); });
      } else {
        const auto [family, shifted] = polynomial_of(op);
        map<C, C>(out, in, [family = family, shifted = shifted](C a, C b) {
          return special::orthogonal_polynomial<C>(family, shifted, a, b);
        });
      }
      return true;
    } else {
      unsupported_compute(op, DType::Float32);
    }
  }
  if constexpr (std::is_integral_v<C>) {
    // Inputs arrive widened to int64 from their own integer dtype, so a shift count below zero
    // or past 63 is the only case the widened shift cannot express by itself.
    switch (op) {
      case PointwiseOp::ShiftLeft:
        map<C, C>(out, in, [](C a, C b) {
          if (b < 0 || b >= C(64)) return C(0);
          return static_cast<C>(static_cast<std::make_unsigned_t<C>>(a) << b);
        });
        return true;
      case PointwiseOp::Gcd:
        map<C, C>(out, in, [](C a, C b) { return euclid_gcd(a, b); });
        return true;
      case PointwiseOp::Lcm:
        // |a / gcd * b| in int64 (as the CPU's kernel forms it in int after C's promotion),
        // wrapped to the dtype's width on store.
        map<C, C>(out, in, [](C a, C b) {
          using U = std::make_unsigned_t<C>;
          const C divisor = euclid_gcd(a, b);
          if (divisor == 0) return C(0);
          const C product = static_cast<C>(static_cast<U>(a / divisor) * static_cast<U>(b));
          return product < 0 ? static_cast<C>(U(0) - static_cast<U>(product)) : product;
        });
        return true;
      case PointwiseOp::ShiftRight:
        map<C, C>(out, in, [](C a, C b) { return a >> ((b < 0 || b >= C(64)) ? C(63) : b); });
        return true;
      default:
        unsupported_compute(op, DType::Int64);
    }
  } else {
    switch (op) {
      case PointwiseOp::Xlog1py:
        map<C, C>(out, in, [](C a, C b) {
          if (std::isnan(b)) return b;
          return a == C(0) ? C(0) : static_cast<C>(a * std::log1p(static_cast<double>(b)));
        });
        return true;
      case PointwiseOp::Igamma:
      case PointwiseOp::Igammac: {
        const bool upper = op == PointwiseOp::Igammac;
        map<C, C>(out, in, [upper](C a, C b) {
          return static_cast<C>(special::regularized_gamma(a, b, upper));
        });
        return true;
      }
      case PointwiseOp::Hypot:
        map<C, C>(out, in, [](C a, C b) { return std::hypot(a, b); });
        return true;
      case PointwiseOp::LogAddExp:
      case PointwiseOp::LogAddExp2: {
        // The larger plus the log of 1 + the smaller's share, in double, rounded once.
        const bool base2 = op == PointwiseOp::LogAddExp2;
        map<C, C>(out, in, [base2](C a, C b) {
          if (std::isinf(a) && a == b) return a;
          const double hi = std::max<double>(a, b), gap = -std::fabs(static_cast<double>(a) - b);
          if (std::isnan(hi) || std::isnan(gap)) return std::numeric_limits<C>::quiet_NaN();
          const double share =
              base2 ? std::log1p(std::exp2(gap)) / std::log(2.0) : std::log1p(std::exp(gap));
          return static_cast<C>(hi + share);
        });
        return true;
      }
      case PointwiseOp::NextAfter:
        // A 16-bit result steps in its own format (the fp32 inputs hold its values exactly).
        if (out.dtype == DType::Float16) {
          map<C, C>(out, in, [](C a, C b) { return static_cast<C>(next_narrow<Half>(a, b)); });
        } else if (out.dtype == DType::BFloat16) {
          map<C, C>(out, in, [](C a, C b) { return static_cast<C>(next_narrow<BFloat16>(a, b)); });
        } else {
          map<C, C>(out, in, [](C a, C b) { return std::nextafter(a, b); });
        }
        return true;
      case PointwiseOp::Copysign:
        map<C, C>(out, in, [](C a, C b) { return std::copysign(a, b); });
        return true;
      case PointwiseOp::LogitBackward: {
        if (!p.present[0] || scalar_as<double>(p.values[0]) < 0) {
          map<C, C>(out, in, [](C grad, C a) {
            return (a < C(0) || a > C(1)) ? std::numeric_limits<C>::quiet_NaN()
                                          : grad / (a * (C(1) - a));
          });
        } else {
          const C lo = scalar_as<C>(p.values[0]);
          const C hi = p.present[1] ? scalar_as<C>(p.values[1]) : C(1) - lo;
          map<C, C>(out, in, [=](C grad, C a) {
            return (a < lo || a > hi) ? C(0) : grad / (a * (C(1) - a));
          });
        }
        return true;
      }
      default:
        unsupported_compute(op, DType::Float32);
    }
  }
}

}  // namespace

bool run_special_unary(PointwiseOp op, const TensorView& out, const TensorView& x, DType compute,
                       const PointwiseParams& params) {
  bool handled = false;
  visit_compute(compute, [&](auto tag) {
    using C = typename decltype(tag)::type;
    if (op == PointwiseOp::Signbit) {
      map<bool, C>(out, std::array<TensorView, 1>{x}, [](C a) {
        if constexpr (std::is_integral_v<C>)
          return a < C(0);
        else
          return std::signbit(a);
      });
      handled = true;
      return;
    }
    if constexpr (std::is_floating_point_v<C>) {
      handled = run_float_unary<C>(op, out, x, params);
    } else {
      unsupported_compute(op, DType::Int64);
    }
  });
  return handled;
}

bool run_special_binary(PointwiseOp op, const TensorView& out, const TensorView& x,
                        const TensorView& y, DType compute, const PointwiseParams& params) {
  bool handled = false;
  visit_compute(compute, [&](auto tag) {
    using C = typename decltype(tag)::type;
    handled = run_binary<C>(op, out, {x, y}, params);
  });
  return handled;
}

}  // namespace openneuron::kernels::pointwise_detail
