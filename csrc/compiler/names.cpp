// Names of the kernel library's pointwise ops and dtypes, as the IR's text form spells them.
#include "compiler/names.h"

#include <stdexcept>

namespace openneuron::compiler {

namespace {

struct PointwiseName {
  const char* name;
  PointwiseOp op;
};

// In PointwiseOp's declaration order; pointwise_op_name indexes it by the enum's value.
constexpr PointwiseName kPointwiseNames[] = {
    {"Abs", PointwiseOp::Abs},
    {"Neg", PointwiseOp::Neg},
    {"Sign", PointwiseOp::Sign},
    {"Exp", PointwiseOp::Exp},
    {"Exp2", PointwiseOp::Exp2},
    {"Log", PointwiseOp::Log},
    {"Log2", PointwiseOp::Log2},
    {"Log10", PointwiseOp::Log10},
    {"Log1p", PointwiseOp::Log1p},
    {"Expm1", PointwiseOp::Expm1},
    {"Sqrt", PointwiseOp::Sqrt},
    {"Rsqrt", PointwiseOp::Rsqrt},
    {"Reciprocal", PointwiseOp::Reciprocal},
    {"Sin", PointwiseOp::Sin},
    {"Cos", PointwiseOp::Cos},
    {"Tan", PointwiseOp::Tan},
    {"Tanh", PointwiseOp::Tanh},
    {"Sigmoid", PointwiseOp::Sigmoid},
    {"Erf", PointwiseOp::Erf},
    {"Frac", PointwiseOp::Frac},
    {"Floor", PointwiseOp::Floor},
    {"Ceil", PointwiseOp::Ceil},
    {"Round", PointwiseOp::Round},
    {"Trunc", PointwiseOp::Trunc},
    {"RoundDecimals", PointwiseOp::RoundDecimals},
    {"NanToNum", PointwiseOp::NanToNum},
    {"LogicalNot", PointwiseOp::LogicalNot},
    {"BitwiseNot", PointwiseOp::BitwiseNot},
    {"IsNan", PointwiseOp::IsNan},
    {"IsInf", PointwiseOp::IsInf},
    {"IsPosInf", PointwiseOp::IsPosInf},
    {"IsNegInf", PointwiseOp::IsNegInf},
    {"Clamp", PointwiseOp::Clamp},
    {"Relu", PointwiseOp::Relu},
    {"PowScalar", PointwiseOp::PowScalar},
    {"Gelu", PointwiseOp::Gelu},
    {"Silu", PointwiseOp::Silu},
    {"Mish", PointwiseOp::Mish},
    {"Hardsigmoid", PointwiseOp::Hardsigmoid},
    {"Hardswish", PointwiseOp::Hardswish},
    {"Softplus", PointwiseOp::Softplus},
    {"LeakyRelu", PointwiseOp::LeakyRelu},
    {"Hardtanh", PointwiseOp::Hardtanh},
    {"Elu", PointwiseOp::Elu},
    {"Hardshrink", PointwiseOp::Hardshrink},
    {"Softshrink", PointwiseOp::Softshrink},
    {"Threshold", PointwiseOp::Threshold},
    {"LogSigmoid", PointwiseOp::LogSigmoid},
    {"GeluBackward", PointwiseOp::GeluBackward},
    {"SiluBackward", PointwiseOp::SiluBackward},
    {"MishBackward", PointwiseOp::MishBackward},
    {"HardsigmoidBackward", PointwiseOp::HardsigmoidBackward},
    {"HardswishBackward", PointwiseOp::HardswishBackward},
    {"SigmoidBackward", PointwiseOp::SigmoidBackward},
    {"TanhBackward", PointwiseOp::TanhBackward},
    {"SoftplusBackward", PointwiseOp::SoftplusBackward},
    {"LeakyReluBackward", PointwiseOp::LeakyReluBackward},
    {"HardtanhBackward", PointwiseOp::HardtanhBackward},
    {"EluBackward", PointwiseOp::EluBackward},
    {"HardshrinkBackward", PointwiseOp::HardshrinkBackward},
    {"LogSigmoidBackward", PointwiseOp::LogSigmoidBackward},
    {"Prelu", PointwiseOp::Prelu},
    {"PreluWeightGrad", PointwiseOp::PreluWeightGrad},
    {"SigmoidGate", PointwiseOp::SigmoidGate},
    {"AddAlpha", PointwiseOp::AddAlpha},
    {"SubAlpha", PointwiseOp::SubAlpha},
    {"Mul", PointwiseOp::Mul},
    {"Div", PointwiseOp::Div},
    {"Pow", PointwiseOp::Pow},
    {"Maximum", PointwiseOp::Maximum},
    {"Minimum", PointwiseOp::Minimum},
    {"Atan2", PointwiseOp::Atan2},
    {"Xlogy", PointwiseOp::Xlogy},
    {"Remainder", PointwiseOp::Remainder},
    {"Fmod", PointwiseOp::Fmod},
    {"DivFloor", PointwiseOp::DivFloor},
    {"DivTrunc", PointwiseOp::DivTrunc},
    {"Eq", PointwiseOp::Eq},
    {"Ne", PointwiseOp::Ne},
    {"Lt", PointwiseOp::Lt},
    {"Le", PointwiseOp::Le},
    {"Gt", PointwiseOp::Gt},
    {"Ge", PointwiseOp::Ge},
    {"LogicalAnd", PointwiseOp::LogicalAnd},
    {"LogicalOr", PointwiseOp::LogicalOr},
    {"LogicalXor", PointwiseOp::LogicalXor},
    {"BitwiseAnd", PointwiseOp::BitwiseAnd},
    {"BitwiseOr", PointwiseOp::BitwiseOr},
    {"BitwiseXor", PointwiseOp::BitwiseXor},
    {"ClampMin", PointwiseOp::ClampMin},
    {"ClampMax", PointwiseOp::ClampMax},
    {"ThresholdBackward", PointwiseOp::ThresholdBackward},
    {"LerpScalar", PointwiseOp::LerpScalar},
    {"Where", PointwiseOp::Where},
    {"ClampBoth", PointwiseOp::ClampBoth},
    {"Lerp", PointwiseOp::Lerp},
    {"Addcmul", PointwiseOp::Addcmul},
    {"Addcdiv", PointwiseOp::Addcdiv},
    {"MaskedFill", PointwiseOp::MaskedFill},
    {"PreluInputGrad", PointwiseOp::PreluInputGrad},
    {"SigmoidGateBackward", PointwiseOp::SigmoidGateBackward},
    {"Acos", PointwiseOp::Acos},
    {"Asin", PointwiseOp::Asin},
    {"Atan", PointwiseOp::Atan},
    {"Acosh", PointwiseOp::Acosh},
    {"Asinh", PointwiseOp::Asinh},
    {"Atanh", PointwiseOp::Atanh},
    {"Cosh", PointwiseOp::Cosh},
    {"Sinh", PointwiseOp::Sinh},
    {"Erfc", PointwiseOp::Erfc},
    {"Erfinv", PointwiseOp::Erfinv},
    {"Erfcx", PointwiseOp::Erfcx},
    {"Lgamma", PointwiseOp::Lgamma},
    {"Digamma", PointwiseOp::Digamma},
    {"Polygamma", PointwiseOp::Polygamma},
    {"BesselI0", PointwiseOp::BesselI0},
    {"BesselI0e", PointwiseOp::BesselI0e},
    {"BesselI1", PointwiseOp::BesselI1},
    {"BesselI1e", PointwiseOp::BesselI1e},
    {"Entr", PointwiseOp::Entr},
    {"Logit", PointwiseOp::Logit},
    {"Angle", PointwiseOp::Angle},
    {"Signbit", PointwiseOp::Signbit},
    {"Xlog1py", PointwiseOp::Xlog1py},
    {"Copysign", PointwiseOp::Copysign},
    {"Fmax", PointwiseOp::Fmax},
    {"Fmin", PointwiseOp::Fmin},
    {"Heaviside", PointwiseOp::Heaviside},
    {"LogitBackward", PointwiseOp::LogitBackward},
    {"ShiftLeft", PointwiseOp::ShiftLeft},
    {"ShiftRight", PointwiseOp::ShiftRight},
    {"AiryAi", PointwiseOp::AiryAi},
    {"BesselJ0", PointwiseOp::BesselJ0},
    {"BesselJ1", PointwiseOp::BesselJ1},
    {"BesselY0", PointwiseOp::BesselY0},
    {"BesselY1", PointwiseOp::BesselY1},
    {"BesselK0", PointwiseOp::BesselK0},
    {"BesselK1", PointwiseOp::BesselK1},
    {"BesselK0e", PointwiseOp::BesselK0e},
    {"BesselK1e", PointwiseOp::BesselK1e},
    {"SphericalBesselJ0", PointwiseOp::SphericalBesselJ0},
    {"LogNdtr", PointwiseOp::LogNdtr},
    {"Ndtri", PointwiseOp::Ndtri},
    {"Sinc", PointwiseOp::Sinc},
    {"Zeta", PointwiseOp::Zeta},
    {"ChebyshevT", PointwiseOp::ChebyshevT},
    {"ChebyshevU", PointwiseOp::ChebyshevU},
    {"ChebyshevV", PointwiseOp::ChebyshevV},
    {"ChebyshevW", PointwiseOp::ChebyshevW},
    {"ShiftedChebyshevT", PointwiseOp::ShiftedChebyshevT},
    {"ShiftedChebyshevU", PointwiseOp::ShiftedChebyshevU},
    {"ShiftedChebyshevV", PointwiseOp::ShiftedChebyshevV},
    {"ShiftedChebyshevW", PointwiseOp::ShiftedChebyshevW},
    {"HermiteH", PointwiseOp::HermiteH},
    {"HermiteHe", PointwiseOp::HermiteHe},
    {"LaguerreL", PointwiseOp::LaguerreL},
    {"LegendreP", PointwiseOp::LegendreP},
    {"Hypot", PointwiseOp::Hypot},
    {"Gcd", PointwiseOp::Gcd},
    {"Lcm", PointwiseOp::Lcm},
    {"Igamma", PointwiseOp::Igamma},
    {"Igammac", PointwiseOp::Igammac},
    {"LogAddExp", PointwiseOp::LogAddExp},
    {"LogAddExp2", PointwiseOp::LogAddExp2},
    {"NextAfter", PointwiseOp::NextAfter},
};

struct DTypeName {
  const char* name;
  DType dtype;
};

constexpr DTypeName kDTypeNames[] = {
    {"b8", DType::Bool},     {"u8", DType::UInt8},          {"i8", DType::Int8},
    {"i16", DType::Int16},   {"i32", DType::Int32},         {"i64", DType::Int64},
    {"f16", DType::Float16}, {"bf16", DType::BFloat16},     {"f32", DType::Float32},
    {"f64", DType::Float64}, {"f8e4m3", DType::Float8E4M3}, {"f8e5m2", DType::Float8E5M2},
};

}  // namespace

const char* pointwise_op_name(PointwiseOp op) {
  const auto index = static_cast<size_t>(op);
  if (index >= std::size(kPointwiseNames) || kPointwiseNames[index].op != op) {
    throw std::invalid_argument("compiler: pointwise op without a name");
  }
  return kPointwiseNames[index].name;
}

bool parse_pointwise_op(const std::string& name, PointwiseOp* op) {
  for (const PointwiseName& entry : kPointwiseNames) {
    if (name == entry.name) {
      *op = entry.op;
      return true;
    }
  }
  return false;
}

const char* dtype_short_name(DType dtype) {
  for (const DTypeName& entry : kDTypeNames) {
    if (entry.dtype == dtype) return entry.name;
  }
  throw std::invalid_argument("compiler: dtype without a name");
}

bool parse_dtype(const std::string& name, DType* dtype) {
  for (const DTypeName& entry : kDTypeNames) {
    if (name == entry.name) {
      *dtype = entry.dtype;
      return true;
    }
  }
  return false;
}

}  // namespace openneuron::compiler
