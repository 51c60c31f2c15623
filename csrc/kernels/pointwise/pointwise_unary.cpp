// Unary math ops of kernels::pointwise (abs ... isnan, clamp, pow by a scalar).
#include <cfloat>
#include <cmath>

#include "kernels/pointwise/pointwise_internal.h"
#include "kernels/pointwise/pointwise_map.h"
#include "kernels/pointwise/pointwise_math.h"

namespace openneuron::kernels::pointwise_detail {

namespace {

// Largest finite value of a floating output dtype, as nan_to_num's default replacement.
double largest_finite(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return 65504.0;
    case DType::BFloat16:
      return 3.3895313892515355e38;
    case DType::Float64:
      return DBL_MAX;
    case DType::Float8E4M3:
      return 448.0;
    case DType::Float8E5M2:
      return 57344.0;
    default:
      return FLT_MAX;
  }
}

template <typename C>
bool run_any_type(PointwiseOp op, const TensorView& out, const TensorView& xv,
                  const PointwiseParams& p) {
  const std::array<TensorView, 1> in{xv};
  switch (op) {
    case PointwiseOp::Abs:
      // fabs for floats: abs(-0.0) is +0.0 (a < 0 is false for -0.0).
      map<C, C>(out, in, [](C a) {
        if constexpr (std::is_floating_point_v<C>)
          return std::fabs(a);
        else
          return a < C(0) ? wrap_neg(a) : a;
      });
      return true;
    case PointwiseOp::Neg:
      map<C, C>(out, in, [](C a) { return wrap_neg(a); });
      return true;
    case PointwiseOp::Sign:
      // NaN compares false both ways and so maps to 0, as on PyTorch's CPU.
      map<C, C>(out, in, [](C a) { return C((C(0) < a) - (a < C(0))); });
      return true;
    case PointwiseOp::LogicalNot:
      map<bool, C>(out, in, [](C a) { return a == C(0); });
      return true;
    case PointwiseOp::IsNan:
      map<bool, C>(out, in, [](C a) { return is_nan(a); });
      return true;
    case PointwiseOp::IsInf:
      map<bool, C>(out, in, [](C a) {
        if constexpr (std::is_integral_v<C>)
          return false;
        else
          return std::isinf(a);
      });
      return true;
    case PointwiseOp::IsPosInf:
      map<bool, C>(out, in, [](C a) {
        if constexpr (std::is_integral_v<C>)
          return false;
        else
          return a == std::numeric_limits<C>::infinity();
      });
      return true;
    case PointwiseOp::IsNegInf:
      map<bool, C>(out, in, [](C a) {
        if constexpr (std::is_integral_v<C>)
          return false;
        else
          return a == -std::numeric_limits<C>::infinity();
      });
      return true;
    case PointwiseOp::Relu:
      map<C, C>(out, in, [](C a) { return a < C(0) ? C(0) : a; });
      return true;
    case PointwiseOp::Clamp: {
      const bool has_min = p.present[0], has_max = p.present[1];
      const C lo = scalar_as<C>(p.values[0]), hi = scalar_as<C>(p.values[1]);
      if (has_min && has_max) {
        map<C, C>(out, in, [=](C a) { return propagating_min(propagating_max(a, lo), hi); });
      } else if (has_min) {
        map<C, C>(out, in, [=](C a) { return propagating_max(a, lo); });
      } else {
        map<C, C>(out, in, [=](C a) { return propagating_min(a, hi); });
      }
      return true;
    }
    default:
      break;
  }
  if constexpr (std::is_integral_v<C>) {
    switch (op) {
      case PointwiseOp::Floor:
      case PointwiseOp::Ceil:
      case PointwiseOp::Round:
      case PointwiseOp::Trunc:
      case PointwiseOp::NanToNum:
        map<C, C>(out, in, [](C a) { return a; });
        return true;
      case PointwiseOp::BitwiseNot:
        map<C, C>(out, in, [](C a) { return ~a; });
        return true;
      case PointwiseOp::PowScalar: {
        const int64_t exponent = scalar_as<int64_t>(p.values[0]);
        map<C, C>(out, in, [=](C a) { return int_pow(a, exponent); });
        return true;
      }
      default:
        unsupported_compute(op, DType::Int64);
    }
  }
  return false;
}

template <typename C>
bool run_float_type(PointwiseOp op, const TensorView& out, const TensorView& xv,
                    const PointwiseParams& p) {
  const std::array<TensorView, 1> in{xv};
#define OPENNEURON_FLOAT_UNARY(name, expr)        \
  case PointwiseOp::name:                         \
    map<C, C>(out, in, [](C a) { return expr; }); \
    return true;
  switch (op) {
    OPENNEURON_FLOAT_UNARY(Exp, fast_exp(a))
    OPENNEURON_FLOAT_UNARY(Exp2, std::exp2(a))
    OPENNEURON_FLOAT_UNARY(Log, std::log(a))
    OPENNEURON_FLOAT_UNARY(Log2, std::log2(a))
    OPENNEURON_FLOAT_UNARY(Log10, std::log10(a))
    OPENNEURON_FLOAT_UNARY(Log1p, std::log1p(a))
    OPENNEURON_FLOAT_UNARY(Expm1, std::expm1(a))
    OPENNEURON_FLOAT_UNARY(Sqrt, std::sqrt(a))
    OPENNEURON_FLOAT_UNARY(Rsqrt, C(1) / std::sqrt(a))
    OPENNEURON_FLOAT_UNARY(Reciprocal, C(1) / a)
    OPENNEURON_FLOAT_UNARY(Sin, std::sin(a))
    OPENNEURON_FLOAT_UNARY(Cos, std::cos(a))
    OPENNEURON_FLOAT_UNARY(Tan, std::tan(a))
    OPENNEURON_FLOAT_UNARY(Tanh, fast_tanh(a))
    OPENNEURON_FLOAT_UNARY(Sigmoid, sigmoid(a))
    OPENNEURON_FLOAT_UNARY(Erf, std::erf(a))
    OPENNEURON_FLOAT_UNARY(Frac, a - std::trunc(a))
    OPENNEURON_FLOAT_UNARY(Floor, std::floor(a))
    OPENNEURON_FLOAT_UNARY(Ceil, std::ceil(a))
    OPENNEURON_FLOAT_UNARY(Round, std::nearbyint(a))
    OPENNEURON_FLOAT_UNARY(Trunc, std::trunc(a))
#undef OPENNEURON_FLOAT_UNARY
    case PointwiseOp::RoundDecimals: {
      int64_t decimals = scalar_as<int64_t>(p.values[0]);
      const bool negative = decimals < 0;
      const C scale =
          static_cast<C>(std::pow(10.0, static_cast<double>(negative ? -decimals : decimals)));
      if (negative) {
        map<C, C>(out, in, [=](C a) { return std::nearbyint(a / scale) * scale; });
      } else {
        map<C, C>(out, in, [=](C a) { return std::nearbyint(a * scale) / scale; });
      }
      return true;
    }
    case PointwiseOp::NanToNum: {
      const double largest = largest_finite(out.dtype);
      const C nan_value = p.present[0] ? scalar_as<C>(p.values[0]) : C(0);
      const C pos_value = p.present[1] ? scalar_as<C>(p.values[1]) : static_cast<C>(largest);
      const C neg_value = p.present[2] ? scalar_as<C>(p.values[2]) : static_cast<C>(-largest);
      map<C, C>(out, in, [=](C a) {
        if (a != a) return nan_value;
        if (a == std::numeric_limits<C>::infinity()) return pos_value;
        if (a == -std::numeric_limits<C>::infinity()) return neg_value;
        return a;
      });
      return true;
    }
    case PointwiseOp::PowScalar: {
      const C e = scalar_as<C>(p.values[0]);
      // The common exponents use exact arithmetic instead of pow, like PyTorch's CPU kernel.
      // Like PyTorch, x ** 1 is a copy and x ** 0 is 1 (autograd asks for x ** 1 in pow's
      // backward).
      if (e == C(1)) {
        map<C, C>(out, in, [](C a) { return a; });
      } else if (e == C(0)) {
        map<C, C>(out, in, [](C) { return C(1); });
      } else if (e == C(2)) {
        map<C, C>(out, in, [](C a) { return a * a; });
      } else if (e == C(3)) {
        map<C, C>(out, in, [](C a) { return a * a * a; });
      } else if (e == C(0.5)) {
        map<C, C>(out, in, [](C a) { return std::sqrt(a); });
      } else if (e == C(-0.5)) {
        map<C, C>(out, in, [](C a) { return C(1) / std::sqrt(a); });
      } else if (e == C(-1)) {
        map<C, C>(out, in, [](C a) { return C(1) / a; });
      } else if (e == C(-2)) {
        map<C, C>(out, in, [](C a) { return C(1) / (a * a); });
      } else {
        map<C, C>(out, in, [=](C a) { return std::pow(a, e); });
      }
      return true;
    }
    case PointwiseOp::BitwiseNot:
      unsupported_compute(op, DType::Float32);
    default:
      return false;
  }
}

}  // namespace

bool run_unary_math(PointwiseOp op, const TensorView& out, const TensorView& x, DType compute,
                    const PointwiseParams& params) {
  bool handled = false;
  visit_compute(compute, [&](auto tag) {
    using C = typename decltype(tag)::type;
    handled = run_any_type<C>(op, out, x, params);
    if constexpr (std::is_floating_point_v<C>) {
      if (!handled) handled = run_float_type<C>(op, out, x, params);
    }
  });
  return handled;
}

}  // namespace openneuron::kernels::pointwise_detail
