// Three-input ops of kernels::pointwise: where, clamp by tensors, lerp, addcmul, addcdiv,
// masked_fill, and the three-input activation gradients (prelu's, glu's).
#include <cmath>

#include "kernels/pointwise/pointwise_internal.h"
#include "kernels/pointwise/pointwise_map.h"
#include "kernels/pointwise/pointwise_math.h"

namespace openneuron::kernels::pointwise_detail {

bool run_ternary(PointwiseOp op, const TensorView& out, const TensorView& x, const TensorView& y,
                 const TensorView& z, DType compute, const PointwiseParams& p) {
  const std::array<TensorView, 3> in{x, y, z};
  visit_compute(compute, [&](auto tag) {
    using C = typename decltype(tag)::type;
    const C value = p.present[0] ? scalar_as<C>(p.values[0]) : C(1);
    switch (op) {
      case PointwiseOp::Where:
        map<C, C>(out, in, [](C condition, C a, C b) { return condition != C(0) ? a : b; });
        return;
      case PointwiseOp::MaskedFill:
        map<C, C>(out, in, [](C a, C mask, C fill) { return mask != C(0) ? fill : a; });
        return;
      case PointwiseOp::ClampBoth:
        map<C, C>(out, in, [](C a, C lo, C hi) {
          return is_nan(a) ? a : propagating_min(propagating_max(a, lo), hi);
        });
        return;
      case PointwiseOp::Addcmul:
        // Evaluated as x + (value * y) * z, the order PyTorch's CPU kernel uses.
        if (value == C(1)) {
          map<C, C>(out, in, [](C a, C b, C c) { return wrap_add(a, wrap_mul(b, c)); });
        } else {
          map<C, C>(out, in,
                    [=](C a, C b, C c) { return wrap_add(a, wrap_mul(wrap_mul(value, b), c)); });
        }
        return;
      default:
        break;
    }
    if constexpr (std::is_floating_point_v<C>) {
      switch (op) {
        case PointwiseOp::Addcdiv:
          map<C, C>(out, in, [=](C a, C b, C c) { return a + value * b / c; });
          return;
        case PointwiseOp::Lerp:
          map<C, C>(out, in, [](C a, C b, C w) {
            return std::abs(w) < C(0.5) ? a + w * (b - a) : b - (b - a) * (C(1) - w);
          });
          return;
        case PointwiseOp::PreluInputGrad:
          map<C, C>(out, in, [](C g, C a, C w) { return a > C(0) ? g : w * g; });
          return;
        case PointwiseOp::SigmoidGateBackward:
          map<C, C>(out, in, [](C g, C a, C b) {
            const C s = sigmoid(b);
            return (C(1) - s) * s * a * g;
          });
          return;
        default:
          break;
      }
    }
    unsupported_compute(op, compute);
  });
  return true;
}

}  // namespace openneuron::kernels::pointwise_detail
