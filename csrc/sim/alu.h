// What one ALU operation and one activation function compute, in fp32. The reference
// interpreter and the fast executor both call these, so they agree bit for bit.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "sim/activation_math.h"
#include "sim/isa.h"

namespace openneuron::sim {

// Always inlined: callers pass a constant op in their inner loops, and only an inlined copy folds
// the switch away (an outlined call per element was a tenth of small-tile kernels' time).
__attribute__((always_inline)) inline float apply_alu(AluOp op, float x, float y) {
  switch (op) {
    case AluOp::kBypass:
      return x;
    case AluOp::kAdd:
      return x + y;
    case AluOp::kSubtract:
      return x - y;
    case AluOp::kMultiply:
      return x * y;
    case AluOp::kDivide:
      return x / y;
    case AluOp::kMax:
      return std::isnan(x) || std::isnan(y) ? std::numeric_limits<float>::quiet_NaN()
                                            : (x > y ? x : y);
    case AluOp::kMin:
      return std::isnan(x) || std::isnan(y) ? std::numeric_limits<float>::quiet_NaN()
                                            : (x < y ? x : y);
    case AluOp::kPow:
      return std::pow(x, y);
    case AluOp::kMod:
      return std::fmod(x, y);
    case AluOp::kAbsMax:
      return std::fmax(std::fabs(x), std::fabs(y));
    case AluOp::kIsEqual:
      return x == y ? 1.0f : 0.0f;
    case AluOp::kNotEqual:
      return x != y ? 1.0f : 0.0f;
    case AluOp::kIsGe:
      return x >= y ? 1.0f : 0.0f;
    case AluOp::kIsGt:
      return x > y ? 1.0f : 0.0f;
    case AluOp::kIsLe:
      return x <= y ? 1.0f : 0.0f;
    case AluOp::kIsLt:
      return x < y ? 1.0f : 0.0f;
    case AluOp::kLogicalAnd:
      return (x != 0.0f && y != 0.0f) ? 1.0f : 0.0f;
    case AluOp::kLogicalOr:
      return (x != 0.0f || y != 0.0f) ? 1.0f : 0.0f;
    case AluOp::kLogicalXor:
      return ((x != 0.0f) != (y != 0.0f)) ? 1.0f : 0.0f;
    case AluOp::kBitwiseAnd:
      return static_cast<float>(static_cast<int32_t>(x) & static_cast<int32_t>(y));
    case AluOp::kBitwiseOr:
      return static_cast<float>(static_cast<int32_t>(x) | static_cast<int32_t>(y));
    case AluOp::kBitwiseXor:
      return static_cast<float>(static_cast<int32_t>(x) ^ static_cast<int32_t>(y));
    case AluOp::kCount:
      break;
  }
  return x;
}

// The value a reduction with `op` starts from; NaN marks "start from the first element".
inline bool reduction_identity(AluOp op, float* identity) {
  switch (op) {
    case AluOp::kAdd:
    case AluOp::kSubtract:
    case AluOp::kLogicalOr:
    case AluOp::kLogicalXor:
    case AluOp::kBitwiseOr:
    case AluOp::kBitwiseXor:
      *identity = 0.0f;
      return true;
    case AluOp::kMultiply:
    case AluOp::kLogicalAnd:
      *identity = 1.0f;
      return true;
    case AluOp::kMax:
      *identity = -std::numeric_limits<float>::infinity();
      return true;
    case AluOp::kMin:
      *identity = std::numeric_limits<float>::infinity();
      return true;
    case AluOp::kAbsMax:
      *identity = 0.0f;
      return true;
    default:
      return false;
  }
}

// A reduction step: subtracting reductions sum (x - y - z ... is not associative; the ALU adds).
inline float reduce_step(AluOp op, float accumulator, float value) {
  return apply_alu(op == AluOp::kSubtract ? AluOp::kAdd : op, accumulator, value);
}

// Reductions with an identity fold in eight lanes: element j of a row goes to lane j mod 8, and
// the lanes combine as ((0,1),(2,3)),((4,5),(6,7)). The order is part of the definition (the
// reference interpreter and the fast executor both follow it); it lets the fast executor keep
// eight independent accumulators instead of one serial chain.
constexpr int kReduceLanes = 8;

inline float combine_lanes(AluOp op, const float* lanes) {
  const float a = reduce_step(op, lanes[0], lanes[1]), b = reduce_step(op, lanes[2], lanes[3]);
  const float c = reduce_step(op, lanes[4], lanes[5]), d = reduce_step(op, lanes[6], lanes[7]);
  return reduce_step(op, reduce_step(op, a, b), reduce_step(op, c, d));
}

// The reduction of values[0..count) with `op` as isa.h defines it: in lanes when `op` has an
// identity, else left to right from the first element.
inline float reduce_row(AluOp op, const float* values, int64_t count) {
  float identity = 0.0f;
  if (!reduction_identity(op, &identity)) {
    if (count == 0) return identity;
    float acc = values[0];
    for (int64_t j = 1; j < count; ++j) acc = reduce_step(op, acc, values[j]);
    return acc;
  }
  float lanes[kReduceLanes];
  for (float& lane : lanes) lane = identity;
  for (int64_t j = 0; j < count; ++j) {
    lanes[j % kReduceLanes] = reduce_step(op, lanes[j % kReduceLanes], values[j]);
  }
  return combine_lanes(op, lanes);
}

// Every function but sin and cos of |x| ≥ 2^24 (libm's sinf/cosf) is built on
// activation_math.h, so its loops vectorise; activation_accuracy_test.cpp bounds each against
// float64.
__attribute__((always_inline)) inline float apply_activation(ActivationFunction function, float x) {
  switch (function) {
    case ActivationFunction::kCopy:
      return x;
    case ActivationFunction::kExp:
      return exp_f32(x);
    case ActivationFunction::kLog:
      return log_f32(x);
    case ActivationFunction::kTanh:
      return tanh_f32(x);
    case ActivationFunction::kSigmoid:
      return 1.0f / (1.0f + exp_f32(-x));
    case ActivationFunction::kRelu:
      return x > 0.0f ? x : (std::isnan(x) ? x : 0.0f);
    case ActivationFunction::kGelu:
      return 0.5f * x * (1.0f + erf_f32(x * 0.70710678118654752f));
    case ActivationFunction::kGeluTanh: {
      const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
      return 0.5f * x * (1.0f + tanh_f32(inner));
    }
    case ActivationFunction::kSilu:
      return x / (1.0f + exp_f32(-x));
    case ActivationFunction::kSqrt:
      return std::sqrt(x);
    case ActivationFunction::kRsqrt:
      return 1.0f / std::sqrt(x);
    case ActivationFunction::kReciprocal:
      return 1.0f / x;
    case ActivationFunction::kSquare:
      return x * x;
    case ActivationFunction::kAbs:
      return std::fabs(x);
    case ActivationFunction::kSin:
      return sin_cos_reducible(x) ? sin_cos_f32(x, false) : std::sin(x);
    case ActivationFunction::kCos:
      return sin_cos_reducible(x) ? sin_cos_f32(x, true) : std::cos(x);
    case ActivationFunction::kSoftplus:
      return softplus_f32(x);
    case ActivationFunction::kErf:
      return erf_f32(x);
    case ActivationFunction::kSign:
      return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x);
    case ActivationFunction::kNegate:
      return -x;
    case ActivationFunction::kMish:
      return mish_f32(x);
    case ActivationFunction::kArctan:
      return atan_f32(x);
    case ActivationFunction::kGeluSigmoid:
      return x / (1.0f + exp_f32(-1.702f * x));
    case ActivationFunction::kGeluSigmoidDx: {
      const float s = 1.0f / (1.0f + exp_f32(-1.702f * x));
      return s + 1.702f * x * s * (1.0f - s);
    }
    case ActivationFunction::kSiluDx: {
      const float s = 1.0f / (1.0f + exp_f32(-x));
      return s * (1.0f + x * (1.0f - s));
    }
    case ActivationFunction::kCount:
      break;
  }
  return x;
}

}  // namespace openneuron::sim
