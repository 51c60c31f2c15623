// What one ALU operation and one activation function compute, in fp32. The reference
// interpreter and the fast executor both call these, so they agree bit for bit.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

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

// The float with value 2^n, for -126 ≤ n ≤ 127. Shifted as unsigned: a NaN input's n is out of
// that range (its result is discarded), and shifting a negative int is undefined.
__attribute__((always_inline)) inline float power_of_two(int32_t n) {
  const uint32_t bits = static_cast<uint32_t>(n + 127) << 23;
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// e^x in fp32 to about 1 ulp, written without branches or table lookups so loops over it
// vectorise (the interpreter and the fast executor both call it, so they agree bit for bit):
// x = n·ln2 + r with |r| ≤ ln2/2, e^r by a degree-6 polynomial, then 2^n applied in two halves
// so results near overflow and underflow round like any product.
// Always inlined: an outlined call per element keeps the activation loops scalar.
__attribute__((always_inline)) inline float exp_f32(float x) {
  // Comparisons rather than fmin/fmax (library calls that keep loops scalar); NaN passes
  // through both and is restored at the end.
  float clamped = x < -104.0f ? -104.0f : x;
  clamped = clamped > 88.8f ? 88.8f : clamped;
  // Round to the nearest integer by adding and removing 1.5 * 2^23.
  const float n = (clamped * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = std::fma(n, -0.693145751953125f, clamped);  // ln2 split in two for exactness
  r = std::fma(n, -1.428606765330187045e-06f, r);
  float p = 1.0f / 720.0f;
  p = std::fma(p, r, 1.0f / 120.0f);
  p = std::fma(p, r, 1.0f / 24.0f);
  p = std::fma(p, r, 1.0f / 6.0f);
  p = std::fma(p, r, 0.5f);
  p = std::fma(p, r, 1.0f);
  p = std::fma(p, r, 1.0f);
  const auto whole = static_cast<int32_t>(n);
  const int32_t half = whole >> 1;
  const float result = p * power_of_two(half) * power_of_two(whole - half);
  return x != x ? x : result;
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

// The sigmoid family (sigmoid, silu, their derivatives, gelu's sigmoid form) is built on
// exp_f32, so its loops vectorise; activation_accuracy_test.cpp bounds each against float64.
__attribute__((always_inline)) inline float apply_activation(ActivationFunction function, float x) {
  switch (function) {
    case ActivationFunction::kCopy:
      return x;
    case ActivationFunction::kExp:
      return exp_f32(x);
    case ActivationFunction::kLog:
      return std::log(x);
    case ActivationFunction::kTanh:
      return std::tanh(x);
    case ActivationFunction::kSigmoid:
      return 1.0f / (1.0f + exp_f32(-x));
    case ActivationFunction::kRelu:
      return x > 0.0f ? x : (std::isnan(x) ? x : 0.0f);
    case ActivationFunction::kGelu:
      return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    case ActivationFunction::kGeluTanh: {
      const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
      return 0.5f * x * (1.0f + std::tanh(inner));
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
      return std::sin(x);
    case ActivationFunction::kCos:
      return std::cos(x);
    case ActivationFunction::kSoftplus:
      return x > 20.0f ? x : std::log1p(std::exp(x));
    case ActivationFunction::kErf:
      return std::erf(x);
    case ActivationFunction::kSign:
      return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x);
    case ActivationFunction::kNegate:
      return -x;
    case ActivationFunction::kMish: {
      const float softplus = x > 20.0f ? x : std::log1p(std::exp(x));
      return x * std::tanh(softplus);
    }
    case ActivationFunction::kArctan:
      return std::atan(x);
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
