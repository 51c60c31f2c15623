// Activation functions of kernels::pointwise and the gradients autograd asks for.
#include <cmath>

#include "kernels/pointwise/dnnl_eltwise.h"
#include "kernels/pointwise/pointwise_internal.h"
#include "kernels/pointwise/pointwise_map.h"
#include "kernels/pointwise/pointwise_math.h"

namespace openneuron::kernels::pointwise_detail {

namespace {

constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluTanhCoefficient = 0.044715;

template <typename C>
void run_forward(PointwiseOp op, const TensorView& out, const TensorView& xv,
                 const PointwiseParams& p) {
  const std::array<TensorView, 1> in{xv};
  const C p0 = scalar_as<C>(p.values[0]), p1 = scalar_as<C>(p.values[1]),
          p2 = scalar_as<C>(p.values[2]);
  switch (op) {
    case PointwiseOp::Gelu:
      if (p.values[0].to_double() != 0) {
        map<C, C>(out, in, [](C a) {
          const C inner = C(kSqrt2OverPi) * (a + C(kGeluTanhCoefficient) * a * a * a);
          return C(0.5) * a * (C(1) + fast_tanh(inner));
        });
      } else {
        map<C, C>(out, in, [](C a) { return a * C(0.5) * (C(1) + fast_erf(a * C(kSqrtHalf))); });
      }
      return;
    case PointwiseOp::Silu:
      map<C, C>(out, in, [](C a) { return a / (C(1) + fast_exp(-a)); });
      return;
    case PointwiseOp::Mish:
      map<C, C>(out, in, [](C a) { return a * fast_tanh(std::log1p(fast_exp(a))); });
      return;
    case PointwiseOp::Hardsigmoid:
      map<C, C>(out, in, [](C a) { return std::min(std::max(a + C(3), C(0)), C(6)) / C(6); });
      return;
    case PointwiseOp::Hardswish:
      map<C, C>(out, in, [](C a) { return a * std::min(std::max(a + C(3), C(0)), C(6)) / C(6); });
      return;
    case PointwiseOp::Softplus:
      map<C, C>(out, in, [=](C a) { return a * p0 > p1 ? a : std::log1p(std::exp(a * p0)) / p0; });
      return;
    case PointwiseOp::LeakyRelu:
      map<C, C>(out, in, [=](C a) { return a > C(0) ? a : a * p0; });
      return;
    case PointwiseOp::Hardtanh:
      map<C, C>(out, in, [=](C a) { return propagating_min(propagating_max(a, p0), p1); });
      return;
    case PointwiseOp::Elu: {
      const C negative_scale = p0 * p1;
      map<C, C>(out, in,
                [=](C a) { return a <= C(0) ? std::expm1(a * p2) * negative_scale : a * p1; });
      return;
    }
    case PointwiseOp::Hardshrink:
      map<C, C>(out, in, [=](C a) { return (a >= -p0 && a <= p0) ? C(0) : a; });
      return;
    case PointwiseOp::Softshrink:
      // a * 0 inside the band keeps a NaN input NaN, as the CPU's loop does.
      map<C, C>(out, in, [=](C a) { return a > p0 ? a - p0 : (a < -p0 ? a + p0 : a * C(0)); });
      return;
    case PointwiseOp::Threshold:
      map<C, C>(out, in, [=](C a) { return a <= p0 ? p1 : a; });
      return;
    case PointwiseOp::LogSigmoid:
      map<C, C>(out, in,
                [](C a) { return std::min(a, C(0)) - std::log1p(fast_exp(-std::abs(a))); });
      return;
    default:
      unsupported_compute(op, DType::Float32);
  }
}

template <typename C>
void run_backward(PointwiseOp op, const TensorView& out, const TensorView& gv, const TensorView& xv,
                  const PointwiseParams& p) {
  const std::array<TensorView, 2> in{gv, xv};
  const C p0 = scalar_as<C>(p.values[0]), p1 = scalar_as<C>(p.values[1]),
          p2 = scalar_as<C>(p.values[2]);
  switch (op) {
    case PointwiseOp::GeluBackward:
      if (p.values[0].to_double() != 0) {
        map<C, C>(out, in, [](C g, C a) {
          const C beta = C(kSqrt2OverPi), kappa = C(kGeluTanhCoefficient);
          const C a_sq = a * a;
          const C tanh_inner = fast_tanh(beta * (a + kappa * a_sq * a));
          const C left = C(0.5) * a;
          const C right = C(1) + tanh_inner;
          const C right_derivative =
              (C(1) - tanh_inner * tanh_inner) * beta * (C(1) + C(3) * kappa * a_sq);
          return g * (C(0.5) * right + left * right_derivative);
        });
      } else {
        map<C, C>(out, in, [](C g, C a) {
          const C cdf = C(0.5) * (C(1) + fast_erf(a * C(kSqrtHalf)));
          const C pdf = fast_exp(C(-0.5) * a * a) * C(kInvSqrt2Pi);
          return g * (cdf + a * pdf);
        });
      }
      return;
    case PointwiseOp::SiluBackward:
      map<C, C>(out, in, [](C g, C a) {
        const C s = sigmoid(a);
        return g * s * (C(1) + a * (C(1) - s));
      });
      return;
    case PointwiseOp::MishBackward:
      map<C, C>(out, in, [](C g, C a) {
        const C t = fast_tanh(std::log1p(fast_exp(a)));
        const C s = sigmoid(a);
        return g * (t + a * s * (C(1) - t * t));
      });
      return;
    case PointwiseOp::HardsigmoidBackward:
      map<C, C>(out, in, [](C g, C a) { return (a > C(-3) && a < C(3)) ? g / C(6) : C(0); });
      return;
    case PointwiseOp::HardswishBackward:
      map<C, C>(out, in, [](C g, C a) {
        if (a < C(-3)) return C(0);
        return a <= C(3) ? g * (a / C(3) + C(0.5)) : g;
      });
      return;
    case PointwiseOp::SigmoidBackward:
      map<C, C>(out, in, [](C g, C y) { return g * (C(1) - y) * y; });
      return;
    case PointwiseOp::TanhBackward:
      map<C, C>(out, in, [](C g, C y) { return g * (C(1) - y * y); });
      return;
    case PointwiseOp::SoftplusBackward:
      map<C, C>(out, in, [=](C g, C a) {
        const C z = std::exp(a * p0);
        return a * p0 > p1 ? g : g * z / (z + C(1));
      });
      return;
    case PointwiseOp::LeakyReluBackward:
      map<C, C>(out, in, [=](C g, C a) { return a > C(0) ? g : g * p0; });
      return;
    case PointwiseOp::HardtanhBackward:
      // As PyTorch's CPU scalar loop: 0 at and beyond the bounds, g for NaN. (Its vectorized
      // loop, taken for contiguous runs, gives 0 for NaN: the CPU's value there depends on
      // the layout.)
      map<C, C>(out, in, [=](C g, C a) { return (a <= p0 || a >= p1) ? C(0) : g; });
      return;
    case PointwiseOp::EluBackward: {
      // As PyTorch's CPU scalar loop: a NaN input takes the positive branch (its vectorized
      // loop gives NaN there).
      const C negative_scale = p0 * p1;
      if (p.values[3].to_double() != 0) {
        // y is elu's output: for y <= 0, d/dx = input_scale * (y + alpha * scale).
        map<C, C>(out, in,
                  [=](C g, C y) { return y <= C(0) ? g * p2 * (y + negative_scale) : g * p1; });
      } else {
        map<C, C>(out, in, [=](C g, C a) {
          return a <= C(0) ? g * p2 * negative_scale * std::exp(a * p2) : g * p1;
        });
      }
      return;
    }
    case PointwiseOp::HardshrinkBackward:
      map<C, C>(out, in, [=](C g, C a) { return (a >= -p0 && a <= p0) ? C(0) : g; });
      return;
    case PointwiseOp::LogSigmoidBackward:
      map<C, C>(out, in, [](C g, C a) {
        const C z = fast_exp(-std::abs(a));
        const C tail = z / (C(1) + z);
        return g * (a < C(0) ? C(1) - tail : tail);
      });
      return;
    case PointwiseOp::Prelu:
      map<C, C>(out, in, [](C a, C w) { return a > C(0) ? a : w * a; });
      return;
    case PointwiseOp::PreluWeightGrad:
      map<C, C>(out, in, [](C g, C a) { return a > C(0) ? C(0) : a * g; });
      return;
    case PointwiseOp::SigmoidGate:
      map<C, C>(out, in, [](C a, C b) { return a * sigmoid(b); });
      return;
    default:
      unsupported_compute(op, DType::Float32);
  }
}

// gelu on oneDNN's JIT kernels when every operand is dense in one dtype oneDNN computes
// (PyTorch's CPU backend runs gelu there too); false if not taken.
bool try_dnnl_gelu(PointwiseOp op, const TensorView& out, const TensorView* in,
                   const PointwiseParams& params) {
  if (op != PointwiseOp::Gelu && op != PointwiseOp::GeluBackward) return false;
  const int arity = op == PointwiseOp::Gelu ? 1 : 2;
  if (!out.is_contiguous()) return false;
  for (int k = 0; k < arity; ++k) {
    if (in[k].dtype != out.dtype || !in[k].is_contiguous()) return false;
  }
  const bool tanh_approximation = params.values[0].to_double() != 0;
  if (op == PointwiseOp::Gelu) {
    return dnnl_gelu(out.data, in[0].data, out.numel(), out.dtype, tanh_approximation);
  }
  return dnnl_gelu_backward(out.data, in[0].data, in[1].data, out.numel(), out.dtype,
                            tanh_approximation);
}

}  // namespace

bool run_activation(PointwiseOp op, const TensorView& out, const TensorView* in, DType compute,
                    const PointwiseParams& params) {
  if (op == PointwiseOp::Threshold && !is_floating(compute)) {
    // Integer thresholds compare and replace in int64, where the inputs arrive widened.
    const int64_t bound = scalar_as<int64_t>(params.values[0]);
    const int64_t value = scalar_as<int64_t>(params.values[1]);
    map<int64_t, int64_t>(out, std::array<TensorView, 1>{in[0]},
                          [=](int64_t a) { return a <= bound ? value : a; });
    return true;
  }
  if (!is_floating(compute)) unsupported_compute(op, compute);
  if (try_dnnl_gelu(op, out, in, params)) return true;
  const bool backward = op >= PointwiseOp::GeluBackward;
  visit_compute(compute, [&](auto tag) {
    using C = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<C>) {
      if (backward) {
        run_backward<C>(op, out, in[0], in[1], params);
      } else {
        run_forward<C>(op, out, in[0], params);
      }
    }
  });
  return true;
}

}  // namespace openneuron::kernels::pointwise_detail
