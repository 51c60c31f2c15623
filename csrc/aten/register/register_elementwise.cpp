// Registrations of the elementwise family: one line per op, listing the overloads (functional,
// in-place, out=) that share its definition. Specs are read by PointwiseKernel / ForeachKernel.
#include <torch/library.h>

#include <initializer_list>
#include <memory>

#include "aten/ops/pointwise/ops_elementwise_pointwise.h"
#include "aten/ops/pointwise/ops_special_composed.h"

namespace openneuron::bridge {

namespace {

using kernels::PointwiseOp;
using Op = kernels::PointwiseOp;
using R = ResultRule;

void pointwise(torch::Library& m, std::initializer_list<const char*> overloads,
               PointwiseSpec spec) {
  for (const char* name : overloads) {
    m.impl(name,
           torch::CppFunction::makeFromBoxedFunctor(std::make_unique<PointwiseKernel>(spec, name)));
    register_pointwise_spec(name, spec);
  }
}

void foreach_op(torch::Library& m, std::initializer_list<const char*> overloads, ForeachSpec spec) {
  for (const char* name : overloads) {
    m.impl(name,
           torch::CppFunction::makeFromBoxedFunctor(std::make_unique<ForeachKernel>(spec, name)));
  }
}

PointwiseSpec unary(Op op, R result, uint8_t dtypes) {
  return PointwiseSpec{op, result, dtypes, {0}};
}
PointwiseSpec binary(Op op, R result, uint8_t dtypes) {
  return PointwiseSpec{op, result, dtypes, {0, 1}};
}
PointwiseSpec ternary(Op op, R result, uint8_t dtypes, uint32_t promote_mask = ~0u) {
  return PointwiseSpec{op, result, dtypes, {0, 1, 2}, promote_mask};
}
// The op takes an out= of its result dtype only (TensorIterator's unary-op rule).
PointwiseSpec exact_out(PointwiseSpec spec) {
  spec.out_dtype = OutDtype::Exact;
  return spec;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // Unary math.
  pointwise(m, {"abs", "abs_", "abs.out"}, exact_out(unary(Op::Abs, R::Common, kNumbers)));
  pointwise(m, {"neg", "neg_", "neg.out"}, exact_out(unary(Op::Neg, R::Common, kNumbers)));
  pointwise(m, {"sign", "sign_", "sign.out"}, exact_out(unary(Op::Sign, R::Common, kAllTypes)));
  pointwise(m, {"sgn", "sgn_", "sgn.out"}, exact_out(unary(Op::Sign, R::Common, kAllTypes)));
  pointwise(m, {"exp", "exp_", "exp.out"}, unary(Op::Exp, R::FloatPromote, kAllTypes));
  pointwise(m, {"exp2", "exp2_", "exp2.out"}, unary(Op::Exp2, R::FloatPromote, kAllTypes));
  pointwise(m, {"log", "log_", "log.out"}, unary(Op::Log, R::FloatPromote, kAllTypes));
  pointwise(m, {"log2", "log2_", "log2.out"}, unary(Op::Log2, R::FloatPromote, kAllTypes));
  pointwise(m, {"log10", "log10_", "log10.out"}, unary(Op::Log10, R::FloatPromote, kAllTypes));
  pointwise(m, {"log1p", "log1p_", "log1p.out"}, unary(Op::Log1p, R::FloatPromote, kAllTypes));
  pointwise(m, {"expm1", "expm1_", "expm1.out"}, unary(Op::Expm1, R::FloatPromote, kAllTypes));
  pointwise(m, {"sqrt", "sqrt_", "sqrt.out"}, unary(Op::Sqrt, R::FloatPromote, kAllTypes));
  pointwise(m, {"rsqrt", "rsqrt_", "rsqrt.out"}, unary(Op::Rsqrt, R::FloatPromote, kAllTypes));
  pointwise(m, {"reciprocal", "reciprocal_", "reciprocal.out"},
            unary(Op::Reciprocal, R::FloatPromote, kAllTypes));
  pointwise(m, {"sin", "sin_", "sin.out"}, unary(Op::Sin, R::FloatPromote, kAllTypes));
  pointwise(m, {"cos", "cos_", "cos.out"}, unary(Op::Cos, R::FloatPromote, kAllTypes));
  pointwise(m, {"tan", "tan_", "tan.out"}, unary(Op::Tan, R::FloatPromote, kAllTypes));
  pointwise(m, {"tanh", "tanh_", "tanh.out"}, unary(Op::Tanh, R::FloatPromote, kAllTypes));
  pointwise(m, {"sigmoid", "sigmoid_", "sigmoid.out"},
            unary(Op::Sigmoid, R::FloatPromote, kAllTypes));
  pointwise(m, {"erf", "erf_", "erf.out"}, unary(Op::Erf, R::FloatPromote, kAllTypes));
  pointwise(m, {"floor", "floor_", "floor.out"}, exact_out(unary(Op::Floor, R::Common, kNumbers)));
  pointwise(m, {"ceil", "ceil_", "ceil.out"}, exact_out(unary(Op::Ceil, R::Common, kNumbers)));
  pointwise(m, {"round", "round_", "round.out"}, exact_out(unary(Op::Round, R::Common, kNumbers)));
  pointwise(m, {"round.decimals", "round_.decimals", "round.decimals_out"},
            exact_out(unary(Op::RoundDecimals, R::Common, kFloats)));
  pointwise(m, {"trunc", "trunc_", "trunc.out"}, exact_out(unary(Op::Trunc, R::Common, kNumbers)));
  pointwise(m, {"frac", "frac_", "frac.out"}, exact_out(unary(Op::Frac, R::Common, kFloats)));
  pointwise(m, {"nan_to_num", "nan_to_num_", "nan_to_num.out"},
            unary(Op::NanToNum, R::Common, kAllTypes));
  pointwise(m, {"logical_not", "logical_not_", "logical_not.out"},
            unary(Op::LogicalNot, R::Bool, kAllTypes));
  pointwise(m, {"bitwise_not", "bitwise_not_", "bitwise_not.out"},
            exact_out(unary(Op::BitwiseNot, R::Common, kIntegers | kBool)));
  pointwise(m, {"isnan"}, unary(Op::IsNan, R::Bool, kAllTypes));
  pointwise(m, {"isinf"}, unary(Op::IsInf, R::Bool, kAllTypes));
  pointwise(m, {"isposinf", "isposinf.out"}, unary(Op::IsPosInf, R::Bool, kAllTypes));
  pointwise(m, {"isneginf", "isneginf.out"}, unary(Op::IsNegInf, R::Bool, kAllTypes));

  // Activations and the gradients autograd calls.
  pointwise(m, {"gelu", "gelu_", "gelu.out"}, exact_out(unary(Op::Gelu, R::Common, kFloats)));
  pointwise(m, {"silu", "silu_", "silu.out"}, exact_out(unary(Op::Silu, R::Common, kFloats)));
  pointwise(m, {"mish", "mish_", "mish.out"}, exact_out(unary(Op::Mish, R::Common, kFloats)));
  pointwise(m, {"hardsigmoid", "hardsigmoid_", "hardsigmoid.out"},
            exact_out(unary(Op::Hardsigmoid, R::Common, kFloats)));
  pointwise(m, {"hardswish", "hardswish_", "hardswish.out"},
            exact_out(unary(Op::Hardswish, R::Common, kFloats)));
  pointwise(m, {"softplus", "softplus.out"}, exact_out(unary(Op::Softplus, R::Common, kFloats)));
  pointwise(m, {"leaky_relu", "leaky_relu_", "leaky_relu.out"},
            exact_out(unary(Op::LeakyRelu, R::Common, kFloats)));
  // hardtanh is clamp with defaults: the same op serves integer inputs, as on CPU.
  pointwise(m, {"hardtanh", "hardtanh_", "hardtanh.out"},
            exact_out(unary(Op::Clamp, R::Common, kNumbers)));
  pointwise(m, {"elu", "elu_", "elu.out"}, exact_out(unary(Op::Elu, R::Common, kFloats)));
  pointwise(m, {"hardshrink", "hardshrink.out"},
            exact_out(unary(Op::Hardshrink, R::Common, kFloats)));
  pointwise(m, {"softshrink", "softshrink.out"},
            exact_out(unary(Op::Softshrink, R::Common, kFloats)));
  pointwise(m, {"threshold", "threshold_", "threshold.out"},
            unary(Op::Threshold, R::Common, kNumbers));
  pointwise(m, {"_prelu_kernel"}, binary(Op::Prelu, R::Common, kFloats));
  pointwise(m, {"gelu_backward", "gelu_backward.grad_input"},
            binary(Op::GeluBackward, R::Common, kFloats));
  pointwise(m, {"silu_backward", "silu_backward.grad_input"},
            binary(Op::SiluBackward, R::Common, kFloats));
  pointwise(m, {"mish_backward"}, binary(Op::MishBackward, R::Common, kFloats));
  pointwise(m, {"hardsigmoid_backward", "hardsigmoid_backward.grad_input"},
            binary(Op::HardsigmoidBackward, R::Common, kFloats));
  pointwise(m, {"hardswish_backward"}, binary(Op::HardswishBackward, R::Common, kFloats));
  pointwise(m, {"sigmoid_backward", "sigmoid_backward.grad_input"},
            binary(Op::SigmoidBackward, R::Common, kFloats));
  pointwise(m, {"tanh_backward", "tanh_backward.grad_input"},
            binary(Op::TanhBackward, R::Common, kFloats));
  pointwise(m, {"softplus_backward", "softplus_backward.grad_input"},
            binary(Op::SoftplusBackward, R::Common, kFloats));
  pointwise(m, {"leaky_relu_backward", "leaky_relu_backward.grad_input"},
            binary(Op::LeakyReluBackward, R::Common, kFloats));
  pointwise(m, {"hardtanh_backward", "hardtanh_backward.grad_input"},
            binary(Op::HardtanhBackward, R::Common, kFloats));
  pointwise(m, {"elu_backward", "elu_backward.grad_input"},
            PointwiseSpec{Op::EluBackward, R::Common, kFloats, {0, 5}});
  pointwise(m, {"hardshrink_backward", "hardshrink_backward.grad_input"},
            binary(Op::HardshrinkBackward, R::Common, kFloats));
  pointwise(m, {"softshrink_backward", "softshrink_backward.grad_input"},
            binary(Op::HardshrinkBackward, R::Common, kFloats));

  // Binary.
  pointwise(m,
            {"pow.Tensor_Tensor", "pow_.Tensor", "pow.Tensor_Tensor_out", "pow.Tensor_Scalar",
             "pow_.Scalar", "pow.Tensor_Scalar_out", "pow.Scalar", "pow.Scalar_out"},
            binary(Op::Pow, R::Common, kNumbers));
  pointwise(m, {"maximum", "maximum.out"}, binary(Op::Maximum, R::Common, kAllTypes));
  pointwise(m, {"minimum", "minimum.out"}, binary(Op::Minimum, R::Common, kAllTypes));
  pointwise(m, {"atan2", "atan2_", "atan2.out"}, binary(Op::Atan2, R::FloatPromote, kAllTypes));
  pointwise(m,
            {"remainder.Tensor", "remainder_.Tensor", "remainder.Tensor_out", "remainder.Scalar",
             "remainder_.Scalar", "remainder.Scalar_out", "remainder.Scalar_Tensor"},
            binary(Op::Remainder, R::Common, kNumbers));
  pointwise(m,
            {"fmod.Tensor", "fmod_.Tensor", "fmod.Tensor_out", "fmod.Scalar", "fmod_.Scalar",
             "fmod.Scalar_out"},
            binary(Op::Fmod, R::Common, kNumbers));
  pointwise(m,
            {"floor_divide", "floor_divide_.Tensor", "floor_divide.out", "floor_divide.Scalar",
             "floor_divide_.Scalar"},
            binary(Op::DivFloor, R::Common, kNumbers));
  pointwise(m,
            {"div.Tensor_mode", "div_.Tensor_mode", "div.out_mode", "div.Scalar_mode",
             "div_.Scalar_mode"},
            binary(Op::Div, R::FloatPromote, kAllTypes));
  pointwise(
      m, {"eq.Tensor", "eq_.Tensor", "eq.Tensor_out", "eq.Scalar", "eq_.Scalar", "eq.Scalar_out"},
      binary(Op::Eq, R::Bool, kAllTypes));
  pointwise(
      m, {"ne.Tensor", "ne_.Tensor", "ne.Tensor_out", "ne.Scalar", "ne_.Scalar", "ne.Scalar_out"},
      binary(Op::Ne, R::Bool, kAllTypes));
  pointwise(
      m, {"lt.Tensor", "lt_.Tensor", "lt.Tensor_out", "lt.Scalar", "lt_.Scalar", "lt.Scalar_out"},
      binary(Op::Lt, R::Bool, kAllTypes));
  pointwise(
      m, {"le.Tensor", "le_.Tensor", "le.Tensor_out", "le.Scalar", "le_.Scalar", "le.Scalar_out"},
      binary(Op::Le, R::Bool, kAllTypes));
  pointwise(
      m, {"gt.Tensor", "gt_.Tensor", "gt.Tensor_out", "gt.Scalar", "gt_.Scalar", "gt.Scalar_out"},
      binary(Op::Gt, R::Bool, kAllTypes));
  pointwise(
      m, {"ge.Tensor", "ge_.Tensor", "ge.Tensor_out", "ge.Scalar", "ge_.Scalar", "ge.Scalar_out"},
      binary(Op::Ge, R::Bool, kAllTypes));
  pointwise(m, {"logical_and", "logical_and_", "logical_and.out"},
            binary(Op::LogicalAnd, R::Bool, kAllTypes));
  pointwise(m, {"logical_or", "logical_or_", "logical_or.out"},
            binary(Op::LogicalOr, R::Bool, kAllTypes));
  pointwise(m, {"logical_xor", "logical_xor_", "logical_xor.out"},
            binary(Op::LogicalXor, R::Bool, kAllTypes));
  pointwise(m,
            {"bitwise_and.Tensor", "bitwise_and_.Tensor", "bitwise_and.Tensor_out",
             "bitwise_and.Scalar", "bitwise_and_.Scalar", "bitwise_and.Scalar_out"},
            binary(Op::BitwiseAnd, R::Common, kIntegers | kBool));
  pointwise(m,
            {"bitwise_or.Tensor", "bitwise_or_.Tensor", "bitwise_or.Tensor_out",
             "bitwise_or.Scalar", "bitwise_or_.Scalar", "bitwise_or.Scalar_out"},
            binary(Op::BitwiseOr, R::Common, kIntegers | kBool));
  pointwise(m,
            {"bitwise_xor.Tensor", "bitwise_xor_.Tensor", "bitwise_xor.Tensor_out",
             "bitwise_xor.Scalar", "bitwise_xor_.Scalar", "bitwise_xor.Scalar_out"},
            binary(Op::BitwiseXor, R::Common, kIntegers | kBool));
  // Shifts by a tensor; the scalar forms are PyTorch's composites over these (and << / >> in
  // ops_bitwise_shift.cpp).
  pointwise(
      m,
      {"bitwise_left_shift.Tensor", "bitwise_left_shift_.Tensor", "bitwise_left_shift.Tensor_out"},
      binary(Op::ShiftLeft, R::Common, kIntegers));
  pointwise(m,
            {"bitwise_right_shift.Tensor", "bitwise_right_shift_.Tensor",
             "bitwise_right_shift.Tensor_out"},
            binary(Op::ShiftRight, R::Common, kIntegers));
  // Clamping by scalars takes an out= of the result dtype only; by tensors, any it casts to.
  pointwise(m, {"clamp_min", "clamp_min_", "clamp_min.out"},
            exact_out(binary(Op::ClampMin, R::Common, kNumbers)));
  // By tensors, bool too (as the CPU: or / and); by scalars the CPU refuses bool.
  pointwise(m, {"clamp_min.Tensor", "clamp_min_.Tensor", "clamp_min.Tensor_out"},
            binary(Op::ClampMin, R::Common, kAllTypes));
  pointwise(m, {"clamp_max", "clamp_max_", "clamp_max.out"},
            exact_out(binary(Op::ClampMax, R::Common, kNumbers)));
  pointwise(m, {"clamp_max.Tensor", "clamp_max_.Tensor", "clamp_max.Tensor_out"},
            binary(Op::ClampMax, R::Common, kAllTypes));
  pointwise(m, {"lerp.Scalar", "lerp_.Scalar", "lerp.Scalar_out"},
            binary(Op::LerpScalar, R::Common, kFloats));

  // Selection and three-input arithmetic.
  pointwise(m, {"clamp", "clamp_", "clamp.out"},
            exact_out(ternary(Op::ClampBoth, R::Common, kNumbers)));
  pointwise(m, {"clamp.Tensor", "clamp_.Tensor", "clamp.Tensor_out"},
            ternary(Op::ClampBoth, R::Common, kNumbers));
  pointwise(m, {"lerp.Tensor", "lerp_.Tensor", "lerp.Tensor_out"},
            exact_out(ternary(Op::Lerp, R::Common, kFloats)));
  pointwise(m, {"addcmul", "addcmul_", "addcmul.out"}, ternary(Op::Addcmul, R::Common, kNumbers));
  pointwise(m, {"addcdiv", "addcdiv_", "addcdiv.out"}, ternary(Op::Addcdiv, R::Common, kFloats));
  pointwise(m, {"where.self", "where.self_out"}, ternary(Op::Where, R::Common, kAllTypes, 0b110));
  pointwise(m,
            {"masked_fill.Scalar", "masked_fill_.Scalar", "masked_fill.Scalar_out",
             "masked_fill.Tensor", "masked_fill_.Tensor", "masked_fill.Tensor_out"},
            ternary(Op::MaskedFill, R::Self, kAllTypes, 0b001));

  // Special functions: inverse trigonometric and hyperbolic, error, gamma and Bessel families
  // (integers promote to the default float), and the binary ops beside them.
  const auto special = [&](std::initializer_list<const char*> names, Op op) {
    pointwise(m, names, unary(op, R::FloatPromote, kAllTypes));
  };
  special({"acos", "acos_", "acos.out"}, Op::Acos);
  special({"asin", "asin_", "asin.out"}, Op::Asin);
  special({"atan", "atan_", "atan.out"}, Op::Atan);
  special({"acosh", "acosh_", "acosh.out"}, Op::Acosh);
  special({"asinh", "asinh_", "asinh.out"}, Op::Asinh);
  special({"atanh", "atanh_", "atanh.out"}, Op::Atanh);
  special({"cosh", "cosh_", "cosh.out"}, Op::Cosh);
  special({"sinh", "sinh_", "sinh.out"}, Op::Sinh);
  special({"erfc", "erfc_", "erfc.out"}, Op::Erfc);
  special({"erfinv", "erfinv_", "erfinv.out"}, Op::Erfinv);
  special({"special_erfcx", "special_erfcx.out"}, Op::Erfcx);
  special({"lgamma", "lgamma_", "lgamma.out"}, Op::Lgamma);
  special({"digamma", "digamma_", "digamma.out"}, Op::Digamma);
  special({"i0", "i0_", "i0.out"}, Op::BesselI0);
  special({"special_i0e", "special_i0e.out"}, Op::BesselI0e);
  special({"special_i1", "special_i1.out"}, Op::BesselI1);
  special({"special_i1e", "special_i1e.out"}, Op::BesselI1e);
  special({"special_modified_bessel_i0", "special_modified_bessel_i0.out"}, Op::BesselI0);
  special({"special_modified_bessel_i1", "special_modified_bessel_i1.out"}, Op::BesselI1);
  special({"special_entr", "special_entr.out"}, Op::Entr);
  special({"angle", "angle.out"}, Op::Angle);
  special({"logit", "logit_", "logit.out"}, Op::Logit);
  special({"special_airy_ai", "special_airy_ai.out"}, Op::AiryAi);
  special({"special_bessel_j0", "special_bessel_j0.out"}, Op::BesselJ0);
  special({"special_bessel_j1", "special_bessel_j1.out"}, Op::BesselJ1);
  special({"special_bessel_y0", "special_bessel_y0.out"}, Op::BesselY0);
  special({"special_bessel_y1", "special_bessel_y1.out"}, Op::BesselY1);
  special({"special_modified_bessel_k0", "special_modified_bessel_k0.out"}, Op::BesselK0);
  special({"special_modified_bessel_k1", "special_modified_bessel_k1.out"}, Op::BesselK1);
  special({"special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k0.out"},
          Op::BesselK0e);
  special({"special_scaled_modified_bessel_k1", "special_scaled_modified_bessel_k1.out"},
          Op::BesselK1e);
  special({"special_spherical_bessel_j0", "special_spherical_bessel_j0.out"},
          Op::SphericalBesselJ0);
  special({"special_log_ndtr", "special_log_ndtr.out"}, Op::LogNdtr);
  special({"special_ndtri", "special_ndtri.out"}, Op::Ndtri);
  special({"sinc", "sinc_", "sinc.out"}, Op::Sinc);
  // Binary special functions: zeta(x, q) and the polynomials P_n(x) of (x, n); their scalar
  // overloads are PyTorch's composites over these.
  const auto special_binary = [&](std::initializer_list<const char*> names, Op op) {
    pointwise(m, names, binary(op, R::FloatPromote, kAllTypes));
  };
  special_binary({"special_zeta", "special_zeta.out"}, Op::Zeta);
  special_binary({"special_chebyshev_polynomial_t", "special_chebyshev_polynomial_t.out"},
                 Op::ChebyshevT);
  special_binary({"special_chebyshev_polynomial_u", "special_chebyshev_polynomial_u.out"},
                 Op::ChebyshevU);
  special_binary({"special_chebyshev_polynomial_v", "special_chebyshev_polynomial_v.out"},
                 Op::ChebyshevV);
  special_binary({"special_chebyshev_polynomial_w", "special_chebyshev_polynomial_w.out"},
                 Op::ChebyshevW);
  special_binary(
      {"special_shifted_chebyshev_polynomial_t", "special_shifted_chebyshev_polynomial_t.out"},
      Op::ShiftedChebyshevT);
  special_binary(
      {"special_shifted_chebyshev_polynomial_u", "special_shifted_chebyshev_polynomial_u.out"},
      Op::ShiftedChebyshevU);
  special_binary(
      {"special_shifted_chebyshev_polynomial_v", "special_shifted_chebyshev_polynomial_v.out"},
      Op::ShiftedChebyshevV);
  special_binary(
      {"special_shifted_chebyshev_polynomial_w", "special_shifted_chebyshev_polynomial_w.out"},
      Op::ShiftedChebyshevW);
  special_binary({"special_hermite_polynomial_h", "special_hermite_polynomial_h.out"},
                 Op::HermiteH);
  special_binary({"special_hermite_polynomial_he", "special_hermite_polynomial_he.out"},
                 Op::HermiteHe);
  special_binary({"special_laguerre_polynomial_l", "special_laguerre_polynomial_l.out"},
                 Op::LaguerreL);
  special_binary({"special_legendre_polynomial_p", "special_legendre_polynomial_p.out"},
                 Op::LegendreP);
  pointwise(m, {"hypot", "hypot_", "hypot.out"}, binary(Op::Hypot, R::Common, kFloats));
  pointwise(m, {"gcd", "gcd_", "gcd.out"}, binary(Op::Gcd, R::Common, kIntegers));
  pointwise(m, {"lcm", "lcm_", "lcm.out"}, binary(Op::Lcm, R::Common, kIntegers));
  pointwise(m, {"igamma", "igamma_", "igamma.out"}, binary(Op::Igamma, R::Common, kFloats));
  pointwise(m, {"igammac", "igammac_", "igammac.out"}, binary(Op::Igammac, R::Common, kFloats));
  pointwise(m, {"logaddexp", "logaddexp.out"}, binary(Op::LogAddExp, R::Common, kFloats));
  pointwise(m, {"logaddexp2", "logaddexp2.out"}, binary(Op::LogAddExp2, R::Common, kFloats));
  pointwise(m, {"nextafter", "nextafter_", "nextafter.out"},
            binary(Op::NextAfter, R::Common, kFloats));
  // polygamma(n, self) names its operand second; its in-place form first.
  pointwise(m, {"polygamma", "polygamma.out"},
            PointwiseSpec{Op::Polygamma, R::FloatPromote, kAllTypes, {1}});
  pointwise(m, {"polygamma_"}, unary(Op::Polygamma, R::FloatPromote, kAllTypes));
  pointwise(m, {"signbit", "signbit.out"}, unary(Op::Signbit, R::Bool, kAllTypes));
  pointwise(m, {"logit_backward", "logit_backward.grad_input"},
            binary(Op::LogitBackward, R::Common, kFloats));
  pointwise(
      m,
      {"xlogy.Tensor", "xlogy_.Tensor", "xlogy.OutTensor", "xlogy.Scalar_Other",
       "xlogy_.Scalar_Other", "xlogy.OutScalar_Other", "xlogy.Scalar_Self", "xlogy.OutScalar_Self"},
      binary(Op::Xlogy, R::FloatPromote, kAllTypes));
  pointwise(m, {"special_xlog1py", "special_xlog1py.out"},
            binary(Op::Xlog1py, R::FloatPromote, kAllTypes));
  pointwise(m,
            {"copysign.Tensor", "copysign_.Tensor", "copysign.out", "copysign.Scalar",
             "copysign_.Scalar", "copysign.Scalar_out"},
            binary(Op::Copysign, R::FloatPromote, kAllTypes));
  pointwise(m, {"fmax", "fmax.out"}, binary(Op::Fmax, R::Common, kAllTypes));
  pointwise(m, {"fmin", "fmin.out"}, binary(Op::Fmin, R::Common, kAllTypes));
  pointwise(m, {"heaviside", "heaviside_", "heaviside.out"},
            binary(Op::Heaviside, R::Common, kAllTypes));
  // rsub(self, other, alpha) = other - alpha * self: sub with its operands swapped.
  pointwise(m, {"rsub.Tensor"}, PointwiseSpec{Op::SubAlpha, R::Common, kNumbers, {1, 0}});
  m.impl("mvlgamma.out", TORCH_FN(mvlgamma_out));

  // Optimizer building blocks: every call queues one task for the whole tensor list. The dtype
  // classes are the pointwise ops' own; other dtypes reach the host, which refuses them as the CPU
  // does.
  foreach_op(m,
             {"_foreach_add.List", "_foreach_add_.List", "_foreach_add.Scalar",
              "_foreach_add_.Scalar", "_foreach_add.ScalarList", "_foreach_add_.ScalarList",
              "_foreach_add.Tensor", "_foreach_add_.Tensor"},
             {Op::AddAlpha, R::Common});
  foreach_op(m,
             {"_foreach_sub.List", "_foreach_sub_.List", "_foreach_sub.Scalar",
              "_foreach_sub_.Scalar", "_foreach_sub.ScalarList", "_foreach_sub_.ScalarList"},
             {Op::SubAlpha, R::Common, /*extra_is_operand=*/true, kNumbers});
  foreach_op(m,
             {"_foreach_mul.List", "_foreach_mul_.List", "_foreach_mul.Scalar",
              "_foreach_mul_.Scalar", "_foreach_mul.ScalarList", "_foreach_mul_.ScalarList",
              "_foreach_mul.Tensor", "_foreach_mul_.Tensor"},
             {Op::Mul, R::Common});
  foreach_op(m,
             {"_foreach_div.List", "_foreach_div_.List", "_foreach_div.Scalar",
              "_foreach_div_.Scalar", "_foreach_div.ScalarList", "_foreach_div_.ScalarList",
              "_foreach_div.Tensor", "_foreach_div_.Tensor"},
             {Op::Div, R::FloatPromote});
  foreach_op(
      m,
      {"_foreach_maximum.List", "_foreach_maximum_.List", "_foreach_maximum.Scalar",
       "_foreach_maximum_.Scalar", "_foreach_maximum.ScalarList", "_foreach_maximum_.ScalarList"},
      {Op::Maximum, R::Common});
  foreach_op(
      m,
      {"_foreach_minimum.List", "_foreach_minimum_.List", "_foreach_minimum.Scalar",
       "_foreach_minimum_.Scalar", "_foreach_minimum.ScalarList", "_foreach_minimum_.ScalarList"},
      {Op::Minimum, R::Common});
  foreach_op(m,
             {"_foreach_clamp_min.List", "_foreach_clamp_min_.List", "_foreach_clamp_min.Scalar",
              "_foreach_clamp_min_.Scalar", "_foreach_clamp_min.ScalarList",
              "_foreach_clamp_min_.ScalarList"},
             {Op::ClampMin, R::Common, /*extra_is_operand=*/true, kNumbers});
  foreach_op(m,
             {"_foreach_clamp_max.List", "_foreach_clamp_max_.List", "_foreach_clamp_max.Scalar",
              "_foreach_clamp_max_.Scalar", "_foreach_clamp_max.ScalarList",
              "_foreach_clamp_max_.ScalarList"},
             {Op::ClampMax, R::Common, /*extra_is_operand=*/true, kNumbers});
  foreach_op(m,
             {"_foreach_pow.List", "_foreach_pow_.List", "_foreach_pow.Scalar",
              "_foreach_pow_.Scalar", "_foreach_pow.ScalarList", "_foreach_pow_.ScalarList"},
             {Op::Pow, R::Common, /*extra_is_operand=*/true, kNumbers});
  foreach_op(m, {"_foreach_sqrt", "_foreach_sqrt_"}, {Op::Sqrt, R::FloatPromote});
  foreach_op(m, {"_foreach_rsqrt", "_foreach_rsqrt_"}, {Op::Rsqrt, R::FloatPromote});
  foreach_op(m, {"_foreach_exp", "_foreach_exp_"}, {Op::Exp, R::FloatPromote});
  foreach_op(m, {"_foreach_log", "_foreach_log_"}, {Op::Log, R::FloatPromote});
  foreach_op(m, {"_foreach_reciprocal", "_foreach_reciprocal_"}, {Op::Reciprocal, R::FloatPromote});
  foreach_op(m, {"_foreach_sigmoid", "_foreach_sigmoid_"}, {Op::Sigmoid, R::FloatPromote});
  foreach_op(m, {"_foreach_tanh", "_foreach_tanh_"}, {Op::Tanh, R::FloatPromote});
  foreach_op(m, {"_foreach_sin", "_foreach_sin_"}, {Op::Sin, R::FloatPromote});
  foreach_op(m, {"_foreach_cos", "_foreach_cos_"}, {Op::Cos, R::FloatPromote});
  foreach_op(m, {"_foreach_neg", "_foreach_neg_"},
             {Op::Neg, R::Common, /*extra_is_operand=*/true, kNumbers});
  foreach_op(m, {"_foreach_abs", "_foreach_abs_"},
             {Op::Abs, R::Common, /*extra_is_operand=*/true, kNumbers});
  foreach_op(m, {"_foreach_sign", "_foreach_sign_"}, {Op::Sign, R::Common});
  foreach_op(m, {"_foreach_lerp.List", "_foreach_lerp_.List"},
             {Op::Lerp, R::Common, /*extra_is_operand=*/true, kFloats});
  foreach_op(m,
             {"_foreach_lerp.Scalar", "_foreach_lerp_.Scalar", "_foreach_lerp.ScalarList",
              "_foreach_lerp_.ScalarList"},
             {Op::LerpScalar, R::Common, /*extra_is_operand=*/false, kFloats});
  foreach_op(m,
             {"_foreach_addcmul.Scalar", "_foreach_addcmul_.Scalar", "_foreach_addcmul.ScalarList",
              "_foreach_addcmul_.ScalarList"},
             {Op::Addcmul, R::Common, /*extra_is_operand=*/false, kNumbers});
  foreach_op(m,
             {"_foreach_addcdiv.Scalar", "_foreach_addcdiv_.Scalar", "_foreach_addcdiv.ScalarList",
              "_foreach_addcdiv_.ScalarList"},
             {Op::Addcdiv, R::Common, /*extra_is_operand=*/false, kFloats});
  m.impl("zero_", TORCH_FN(zero_));
  m.impl("_fused_adam_", TORCH_FN(fused_adam_));
  m.impl("_fused_adamw_", TORCH_FN(fused_adamw_));
  m.impl("_fused_sgd_", TORCH_FN(fused_sgd_));
}

}  // namespace openneuron::bridge
