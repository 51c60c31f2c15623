// Binary ops of kernels::pointwise: arithmetic, pow, min/max, modulus, comparisons, logic.
#include <cmath>

#include "kernels/core/float_conversions.h"
#include "kernels/pointwise/pointwise_internal.h"
#include "kernels/pointwise/pointwise_map.h"
#include "kernels/pointwise/pointwise_math.h"

namespace openneuron::kernels::pointwise_detail {

namespace {

template <typename C>
bool run_any_type(PointwiseOp op, const TensorView& out, const std::array<TensorView, 2>& in,
                  const PointwiseParams& p) {
  switch (op) {
    case PointwiseOp::AddAlpha:
    case PointwiseOp::SubAlpha: {
      C alpha = p.present[0] ? scalar_as<C>(p.values[0]) : C(1);
      if (op == PointwiseOp::SubAlpha) alpha = wrap_neg(alpha);
      if (alpha == C(1)) {
        map<C, C>(out, in, [](C a, C b) { return wrap_add(a, b); });
      } else {
        map<C, C>(out, in, [=](C a, C b) { return wrap_add(a, wrap_mul(alpha, b)); });
      }
      return true;
    }
    case PointwiseOp::Mul:
      map<C, C>(out, in, [](C a, C b) { return wrap_mul(a, b); });
      return true;
    case PointwiseOp::Maximum:
    case PointwiseOp::ClampMin:
      map<C, C>(out, in, [](C a, C b) { return is_nan(a) ? a : propagating_max(a, b); });
      return true;
    case PointwiseOp::Minimum:
    case PointwiseOp::ClampMax:
      map<C, C>(out, in, [](C a, C b) { return is_nan(a) ? a : propagating_min(a, b); });
      return true;
    case PointwiseOp::ThresholdBackward: {
      const C bound = scalar_as<C>(p.values[0]);
      map<C, C>(out, in, [=](C grad, C x) { return x <= bound ? C(0) : grad; });
      return true;
    }
#define OPENNEURON_PREDICATE(name, expr)                  \
  case PointwiseOp::name:                                 \
    map<bool, C>(out, in, [](C a, C b) { return expr; }); \
    return true;
      OPENNEURON_PREDICATE(Eq, a == b)
      OPENNEURON_PREDICATE(Ne, a != b)
      OPENNEURON_PREDICATE(Lt, a < b)
      OPENNEURON_PREDICATE(Le, a <= b)
      OPENNEURON_PREDICATE(Gt, a > b)
      OPENNEURON_PREDICATE(Ge, a >= b)
      OPENNEURON_PREDICATE(LogicalAnd, a != C(0) && b != C(0))
      OPENNEURON_PREDICATE(LogicalOr, a != C(0) || b != C(0))
      OPENNEURON_PREDICATE(LogicalXor, (a != C(0)) != (b != C(0)))
#undef OPENNEURON_PREDICATE
    default:
      break;
  }
  if constexpr (std::is_integral_v<C>) {
    switch (op) {
      case PointwiseOp::Div:
      case PointwiseOp::DivTrunc:
        map<C, C>(out, in, [](C a, C b) { return int_div_trunc(a, b); });
        return true;
      case PointwiseOp::DivFloor:
        map<C, C>(out, in, [](C a, C b) { return int_div_floor(a, b); });
        return true;
      case PointwiseOp::Remainder:
        map<C, C>(out, in, [](C a, C b) { return int_mod_floor(a, b); });
        return true;
      case PointwiseOp::Fmod:
        map<C, C>(out, in, [](C a, C b) { return int_mod_trunc(a, b); });
        return true;
      case PointwiseOp::Pow:
        map<C, C>(out, in, [](C a, C b) { return int_pow(a, b); });
        return true;
      case PointwiseOp::BitwiseAnd:
        map<C, C>(out, in, [](C a, C b) { return a & b; });
        return true;
      case PointwiseOp::BitwiseOr:
        map<C, C>(out, in, [](C a, C b) { return a | b; });
        return true;
      case PointwiseOp::BitwiseXor:
        map<C, C>(out, in, [](C a, C b) { return a ^ b; });
        return true;
      default:
        unsupported_compute(op, DType::Int64);
    }
  } else {
    switch (op) {
      case PointwiseOp::Div:
        map<C, C>(out, in, [](C a, C b) { return a / b; });
        return true;
      case PointwiseOp::DivTrunc:
        map<C, C>(out, in, [](C a, C b) { return std::trunc(a / b); });
        return true;
      case PointwiseOp::DivFloor:
        map<C, C>(out, in, [](C a, C b) { return float_div_floor(a, b); });
        return true;
      case PointwiseOp::Remainder:
        map<C, C>(out, in, [](C a, C b) { return float_mod_floor(a, b); });
        return true;
      case PointwiseOp::Fmod:
        map<C, C>(out, in, [](C a, C b) { return std::fmod(a, b); });
        return true;
      case PointwiseOp::Pow:
        map<C, C>(out, in, [](C a, C b) { return std::pow(a, b); });
        return true;
      case PointwiseOp::Atan2:
        map<C, C>(out, in, [](C a, C b) { return std::atan2(a, b); });
        return true;
      case PointwiseOp::Xlogy:
        // 0 where x is 0 (even for y 0 or inf), NaN wherever y is NaN.
        map<C, C>(out, in, [](C a, C b) {
          if (std::isnan(b)) return b;
          return a == C(0) ? C(0) : a * std::log(b);
        });
        return true;
      case PointwiseOp::LerpScalar: {
        const C w = scalar_as<C>(p.values[0]);
        // Interpolates from the nearer end so that weight 1 gives exactly y.
        if (std::abs(w) < C(0.5)) {
          map<C, C>(out, in, [=](C a, C b) { return a + w * (b - a); });
        } else {
          map<C, C>(out, in, [=](C a, C b) { return b - (b - a) * (C(1) - w); });
        }
        return true;
      }
      default:
        unsupported_compute(op, DType::Float32);
    }
  }
}

}  // namespace

// Floor and truncating division of 16-bit floats, rounded to the 16-bit format after every
// step as the CPU's (and CUDA's) 16-bit arithmetic does: trunc(17.0) for 57376 / 3376 in float16,
// where one rounding of the fp32 quotient would give 16. `Round` maps fp32 to fp32 via the format.
template <typename Round>
void run_16bit_division(PointwiseOp op, const TensorView& out, const TensorView& x,
                        const TensorView& y, Round round) {
  if (op == PointwiseOp::DivTrunc) {
    map<float, float>(out, std::array<TensorView, 2>{x, y},
                      [=](float a, float b) { return std::trunc(round(a / b)); });
  } else {
    map<float, float>(out, std::array<TensorView, 2>{x, y},
                      [=](float a, float b) { return float_div_floor(a, b, round); });
  }
}

// xlogy of 16-bit floats as the CPU's 16-bit kernel computes it: log(y) rounded to the format
// before the product (the gradient of xlogy is an xlogy, so this keeps both equal to the CPU's).
template <typename Round>
void run_16bit_xlogy(const TensorView& out, const TensorView& x, const TensorView& y, Round round) {
  map<float, float>(out, std::array<TensorView, 2>{x, y}, [=](float a, float b) {
    if (std::isnan(b)) return b;
    return a == 0.0f ? 0.0f : a * round(std::log(b));
  });
}

bool run_binary_math(PointwiseOp op, const TensorView& out, const TensorView& x,
                     const TensorView& y, DType compute, const PointwiseParams& params) {
  if (op == PointwiseOp::Xlogy && compute == DType::Float16) {
    run_16bit_xlogy(out, x, y, [](float v) { return half_bits_to_float(float_to_half_bits(v)); });
    return true;
  }
  if (op == PointwiseOp::Xlogy && compute == DType::BFloat16) {
    run_16bit_xlogy(out, x, y,
                    [](float v) { return bfloat16_bits_to_float(float_to_bfloat16_bits(v)); });
    return true;
  }
  if (op == PointwiseOp::DivTrunc || op == PointwiseOp::DivFloor) {
    if (compute == DType::Float16) {
      run_16bit_division(op, out, x, y,
                         [](float v) { return half_bits_to_float(float_to_half_bits(v)); });
      return true;
    }
    if (compute == DType::BFloat16) {
      run_16bit_division(op, out, x, y,
                         [](float v) { return bfloat16_bits_to_float(float_to_bfloat16_bits(v)); });
      return true;
    }
  }
  bool handled = false;
  visit_compute(compute, [&](auto tag) {
    using C = typename decltype(tag)::type;
    handled = run_any_type<C>(op, out, {x, y}, params);
  });
  return handled;
}

}  // namespace openneuron::kernels::pointwise_detail
