// Helpers shared by the boxed pointwise and foreach kernels of the elementwise family.
#pragma once

#include <ATen/ATen.h>
#include <ATen/ScalarOps.h>
#include <ATen/native/TypeProperties.h>

#include <string>

#include "aten/ops_elementwise_pointwise.h"
#include "aten/tensor_views.h"

namespace openneuron::bridge::elementwise {

// A Python scalar as the 0-dim CPU "wrapped number" tensor ATen's type promotion expects.
inline at::Tensor wrap_scalar(const at::Scalar& value) {
  return at::native::wrapped_scalar_tensor(value);
}

// The result dtype of `promoted` (the operands' promoted dtype) under `rule`.
inline at::ScalarType result_dtype(ResultRule rule, at::ScalarType promoted,
                                   at::ScalarType self_dtype) {
  switch (rule) {
    case ResultRule::FloatPromote:
      return at::isIntegralType(promoted, /*includeBool=*/true)
                 ? c10::typeMetaToScalarType(c10::get_default_dtype())
                 : promoted;
    case ResultRule::Bool:
      return at::kBool;
    case ResultRule::Self:
      return self_dtype;
    case ResultRule::Common:
    default:
      return promoted;
  }
}

// The dtype the kernel computes in: the promoted dtype for bool-valued ops, else the result's.
inline at::ScalarType compute_dtype(ResultRule rule, at::ScalarType promoted,
                                    at::ScalarType result) {
  return rule == ResultRule::Bool ? promoted : result;
}

// Host scalars are converted to the compute precision: fp32 for floats, int64 otherwise.
inline at::ScalarType host_scalar_dtype(at::ScalarType compute) {
  if (compute == at::kDouble) return at::kDouble;
  return at::isFloatingType(compute) ? at::kFloat : at::kLong;
}

inline bool is_16bit_float(at::ScalarType dtype) {
  return dtype == at::kHalf || dtype == at::kBFloat16;
}

// A floating value rounded to dtype if that is a 16-bit float (through float, as c10's
// conversions do); any other value or dtype unchanged.
inline at::Scalar rounded_to(const at::Scalar& value, at::ScalarType dtype) {
  if (!is_16bit_float(dtype) || value.isIntegral(/*includeBool=*/true) || value.isComplex()) {
    return value;
  }
  const auto as_float = static_cast<float>(value.toDouble());
  return dtype == at::kHalf ? at::Scalar(static_cast<float>(c10::Half(as_float)))
                            : at::Scalar(static_cast<float>(c10::BFloat16(as_float)));
}

// What TensorIterator refuses for a written tensor `out`: elements that share memory (an
// expanded tensor) and inputs that overlap it other than exactly (in place is fine).
void check_written_overlap(const at::Tensor& out, c10::ArrayRef<const at::Tensor*> operands);

// The neuron device of an op's operands (and out, if defined); fails like PyTorch on a mix.
c10::Device check_operand_devices(const char* name, const std::vector<at::Tensor>& operands,
                                  const at::Tensor& out);

inline kernels::Scalar scalar_param(const c10::IValue& value, bool* present) {
  *present = !value.isNone();
  if (value.isNone()) return {};
  if (value.isString()) {
    const std::string text = value.toStringRef();
    // gelu's approximate ("tanh") and div's rounding_mode ("floor" / "trunc").
    if (text == "tanh" || text == "floor") return kernels::Scalar::from_int(1);
    if (text == "trunc") return kernels::Scalar::from_int(2);
    return kernels::Scalar::from_int(0);
  }
  if (value.isBool()) return kernels::Scalar::from_int(value.toBool() ? 1 : 0);
  if (value.isInt()) return kernels::Scalar::from_int(value.toInt());
  if (value.isDouble()) return kernels::Scalar::from_double(value.toDouble());
  const at::Scalar scalar = value.toScalar();
  if (scalar.isIntegral(/*includeBool=*/true)) return kernels::Scalar::from_int(scalar.toLong());
  return kernels::Scalar::from_double(scalar.toDouble());
}

}  // namespace openneuron::bridge::elementwise
