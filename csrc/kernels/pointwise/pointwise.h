// Elementwise math, activations and their gradients, comparisons, selection and optimizer
// arithmetic over strided, broadcast device tensors: one entry point, one enum value per op.
#pragma once

#include <cstdint>

#include "kernels/core/scalar.h"
#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// x, y, z name the inputs in order; p0..p3 the scalar parameters (PointwiseParams::values).
enum class PointwiseOp : uint8_t {
  // Unary math. "float" ops need a floating compute dtype; the others also take integers.
  Abs,
  Neg,
  Sign,  // any
  Exp,
  Exp2,
  Log,
  Log2,
  Log10,
  Log1p,
  Expm1,  // float
  Sqrt,
  Rsqrt,
  Reciprocal,
  Sin,
  Cos,
  Tan,
  Tanh,  // float
  Sigmoid,
  Erf,
  Frac,  // float
  Floor,
  Ceil,
  Round,
  Trunc,          // any (identity on integers)
  RoundDecimals,  // float; p0 = decimals
  NanToNum,       // p0 = nan, p1 = posinf, p2 = neginf (absent: the output dtype's max/lowest)
  LogicalNot,     // bool result: x == 0
  BitwiseNot,     // integers
  IsNan,
  IsInf,
  IsPosInf,
  IsNegInf,   // bool result
  Clamp,      // p0 = min, p1 = max (either may be absent); NaN propagates
  Relu,       // any: x < 0 ? 0 : x (NaN and -0.0 pass through, as torch.relu)
  PowScalar,  // x ** p0

  // Activations (float).
  Gelu,  // p0: 0 = exact erf form, 1 = tanh approximation
  Silu,
  Mish,
  Hardsigmoid,
  Hardswish,
  Softplus,    // p0 = beta, p1 = threshold
  LeakyRelu,   // p0 = negative slope
  Hardtanh,    // p0 = min, p1 = max
  Elu,         // p0 = alpha, p1 = scale, p2 = input scale
  Hardshrink,  // |x| <= p0 ? 0 : x (p0 = lambd)
  Softshrink,  // x shrunk towards 0 by p0, 0 inside [-p0, p0]
  Threshold,   // x <= p0 ? p1 : x (integers too)
  LogSigmoid,  // log(sigmoid(x)), stable for large |x|

  // Activation gradients: x = grad_output, y = the forward input (or output where noted).
  GeluBackward,  // p0 as Gelu
  SiluBackward,
  MishBackward,
  HardsigmoidBackward,
  HardswishBackward,
  SigmoidBackward,     // y = sigmoid output
  TanhBackward,        // y = tanh output
  SoftplusBackward,    // p0 = beta, p1 = threshold
  LeakyReluBackward,   // p0 = negative slope
  HardtanhBackward,    // p0 = min, p1 = max
  EluBackward,         // p0 = alpha, p1 = scale, p2 = input scale, p3 = 1 if y is the output
  HardshrinkBackward,  // |y| <= p0 ? 0 : x (softshrink's gradient too)
  LogSigmoidBackward,
  // Two-input activations kept beside the gradients (same arity).
  Prelu,            // x = input, y = weight: x > 0 ? x : y * x
  PreluWeightGrad,  // x = grad_output, y = input: y > 0 ? 0 : x * y
  SigmoidGate,      // x * sigmoid(y): glu's value, and its gradient for the first half

  // Binary.
  AddAlpha,
  SubAlpha,  // x + p0*y, x - p0*y
  Mul,
  Div,  // true division (float), truncating for integers
  Pow,
  Maximum,
  Minimum,
  Atan2,
  Xlogy,      // x * log(y), 0 where x == 0 unless y is NaN (float)
  Remainder,  // Python-style modulus (sign of y)
  Fmod,       // C-style modulus (sign of x)
  DivFloor,
  DivTrunc,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,  // bool result
  LogicalAnd,
  LogicalOr,
  LogicalXor,  // bool result
  BitwiseAnd,
  BitwiseOr,
  BitwiseXor,  // integers and bool
  ClampMin,
  ClampMax,           // max(x, y), min(x, y), NaN propagating
  ThresholdBackward,  // y <= p0 ? 0 : x (x = grad_output, y = input; NaN y passes x)
  LerpScalar,         // x + p0 * (y - x)

  // Ternary.
  Where,                // x != 0 ? y : z
  ClampBoth,            // min(max(x, y), z)
  Lerp,                 // x + z * (y - x)
  Addcmul,              // x + p0 * y * z
  Addcdiv,              // x + p0 * y / z
  MaskedFill,           // y != 0 ? z : x
  PreluInputGrad,       // x = grad_output, y = input, z = weight: y > 0 ? x : z * x
  SigmoidGateBackward,  // x * y * s * (1 - s) with s = sigmoid(z): glu's second-half gradient

  // Added after the three-input ops so that earlier values stay stable.
  // Unary special functions (float; integers promote): inverse trigonometric and hyperbolic, error,
  // gamma and Bessel families, entropy, logit, and two that take any dtype.
  Acos,
  Asin,
  Atan,
  Acosh,
  Asinh,
  Atanh,
  Cosh,
  Sinh,
  Erfc,
  Erfinv,
  Erfcx,
  Lgamma,
  Digamma,
  Polygamma,  // p0 = n (>= 0)
  BesselI0,
  BesselI0e,
  BesselI1,
  BesselI1e,
  Entr,   // -x log x, 0 at 0, -inf below 0
  Logit,  // log(z / (1 - z)), z = x clamped to [p0, p1] when p0 is present (p1 = 1 - p0 if absent)
  Angle,  // real argument: pi below 0, 0 otherwise, NaN kept
  Signbit,  // any dtype, bool result: sign bit set (-0.0 included)

  // Binary ops beside the special functions.
  Xlog1py,   // x * log1p(y), 0 where x == 0 unless y is NaN (float)
  Copysign,  // |x| with y's sign (float)
  Fmax,
  Fmin,           // max / min ignoring NaN (NaN only if both are); any dtype
  Heaviside,      // x == 0 ? y : (x > 0); any dtype
  LogitBackward,  // x = grad_output, y = input: x / (y (1 - y)); p0 = eps as Logit (absent: NaN
                  // outside [0, 1]; present: 0 outside [p0, p1])
  ShiftLeft,      // integers: x << y; 0 for y < 0 or y >= the dtype's width (computed in int64,
                  // so the store's truncation drops the bits shifted past the width)
  ShiftRight,     // integers: x >> y, arithmetic; y < 0 or beyond the width fills with sign bits

  // Unary special functions of torch.special (float; integers promote), in double.
  AiryAi,
  BesselJ0,
  BesselJ1,
  BesselY0,
  BesselY1,
  BesselK0,
  BesselK1,
  BesselK0e,  // exp(x) K0(x)
  BesselK1e,  // exp(x) K1(x)
  SphericalBesselJ0,
  LogNdtr,
  Ndtri,
  Sinc,  // sin(pi x) / (pi x), 1 at 0

  // Binary special functions: Hurwitz zeta(x, q) and the orthogonal polynomials P_n(x) (x, n).
  Zeta,
  ChebyshevT,
  ChebyshevU,
  ChebyshevV,
  ChebyshevW,
  ShiftedChebyshevT,
  ShiftedChebyshevU,
  ShiftedChebyshevV,
  ShiftedChebyshevW,
  HermiteH,
  HermiteHe,
  LaguerreL,
  LegendreP,
  Hypot,       // sqrt(x^2 + y^2) without overflow (float)
  Gcd,         // integers: greatest common divisor of |x| and |y| (gcd(0, 0) = 0)
  Lcm,         // integers: |x / gcd * y|, 0 when either is 0
  Igamma,      // regularized lower incomplete gamma P(x, y) (float)
  Igammac,     // its complement Q(x, y) = 1 - P(x, y) (float)
  LogAddExp,   // log(e^x + e^y) without overflow; x when both are the same infinity (float)
  LogAddExp2,  // log2(2^x + 2^y), likewise (float)
  NextAfter,   // the next value of x's dtype after x towards y (y when equal; float)
};

// Scalar parameters of an op; `present[k]` is false for an optional parameter left out.
struct PointwiseParams {
  Scalar values[4] = {};
  bool present[4] = {false, false, false, false};
};

// Number of tensor inputs `op` takes (1, 2 or 3).
int pointwise_arity(PointwiseOp op);

// True when `op` writes bool results (comparisons, logical ops, isnan...).
bool pointwise_returns_bool(PointwiseOp op);

// out = op(inputs...). Every input has out's ndim and sizes (stride 0 along broadcast dims) and
// any dtype; inputs are read in the compute type of `compute`: double for float64, float for the
// other floats (16-bit results are rounded once on store), int64 for integers and bool. Results
// are converted to out's dtype. out may alias an input exactly (in-place).
// Throws std::invalid_argument for a float-only op with an integer compute dtype (or the
// reverse) and for a wrong number of inputs.
void pointwise(PointwiseOp op, const TensorView& out, const TensorView* inputs, int num_inputs,
               DType compute, const PointwiseParams& params);

}  // namespace openneuron::kernels
