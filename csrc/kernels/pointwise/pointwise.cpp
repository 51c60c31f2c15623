// kernels::pointwise: checks the call and hands the op to the file defining its family.
#include "kernels/pointwise/pointwise.h"

#include <stdexcept>
#include <string>

#include "kernels/pointwise/pointwise_internal.h"

namespace openneuron::kernels {

int pointwise_arity(PointwiseOp op) {
  if (op >= PointwiseOp::AiryAi) return op <= PointwiseOp::Sinc ? 1 : 2;
  if (op >= PointwiseOp::Acos) return op <= PointwiseOp::Signbit ? 1 : 2;
  if (op <= PointwiseOp::LogSigmoid) return 1;
  if (op <= PointwiseOp::LerpScalar) return 2;
  return 3;
}

bool pointwise_returns_bool(PointwiseOp op) {
  switch (op) {
    case PointwiseOp::LogicalNot:
    case PointwiseOp::IsNan:
    case PointwiseOp::IsInf:
    case PointwiseOp::IsPosInf:
    case PointwiseOp::IsNegInf:
    case PointwiseOp::Eq:
    case PointwiseOp::Ne:
    case PointwiseOp::Lt:
    case PointwiseOp::Le:
    case PointwiseOp::Gt:
    case PointwiseOp::Ge:
    case PointwiseOp::LogicalAnd:
    case PointwiseOp::LogicalOr:
    case PointwiseOp::LogicalXor:
    case PointwiseOp::Signbit:
      return true;
    default:
      return false;
  }
}

void pointwise(PointwiseOp op, const TensorView& out, const TensorView* inputs, int num_inputs,
               DType compute, const PointwiseParams& params) {
  if (num_inputs != pointwise_arity(op)) {
    throw std::invalid_argument(
        "openneuron kernels: pointwise op " + std::to_string(static_cast<int>(op)) + " takes " +
        std::to_string(pointwise_arity(op)) + " inputs, got " + std::to_string(num_inputs));
  }
  for (int k = 0; k < num_inputs; ++k) {
    bool same = inputs[k].ndim == out.ndim;
    for (int d = 0; same && d < out.ndim; ++d) same = inputs[k].sizes[d] == out.sizes[d];
    if (!same) {
      throw std::invalid_argument(
          "openneuron kernels: pointwise input must have the output's ndim and sizes");
    }
  }
  if (out.numel() == 0) return;
  using namespace pointwise_detail;
  if ((op >= PointwiseOp::Acos && op <= PointwiseOp::Signbit) ||
      (op >= PointwiseOp::AiryAi && op <= PointwiseOp::Sinc)) {
    run_special_unary(op, out, inputs[0], compute, params);
  } else if (op >= PointwiseOp::Xlog1py) {
    run_special_binary(op, out, inputs[0], inputs[1], compute, params);
  } else if (op <= PointwiseOp::PowScalar) {
    run_unary_math(op, out, inputs[0], compute, params);
  } else if (op <= PointwiseOp::SigmoidGate) {
    run_activation(op, out, inputs, compute, params);
  } else if (op <= PointwiseOp::LerpScalar) {
    run_binary_math(op, out, inputs[0], inputs[1], compute, params);
  } else {
    run_ternary(op, out, inputs[0], inputs[1], inputs[2], compute, params);
  }
}

}  // namespace openneuron::kernels
