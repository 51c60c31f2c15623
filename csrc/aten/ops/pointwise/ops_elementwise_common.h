// Helpers shared by the boxed pointwise and foreach kernels of the elementwise family.
#pragma once

#include <ATen/ATen.h>
#include <ATen/ScalarOps.h>
#include <ATen/native/TypeProperties.h>

#include <string>

#include "aten/core/tensor_views.h"
#include "aten/ops/pointwise/ops_elementwise_pointwise.h"

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

// Whether `dtype` is in `classes` (a DtypeClass mask): the dtypes the device computes an op for.
inline bool dtype_allowed(uint8_t classes, at::ScalarType dtype) {
  if (dtype == at::kBool) return classes & kBool;
  if (at::isIntegralType(dtype, /*includeBool=*/false)) return classes & kIntegers;
  return classes & kFloats;
}

// Subtraction refuses bool operands on every device (a wrapped Python bool counts), because
// `a - b` on masks is almost always a mistake for `a ^ b` or `~a`.
inline void check_subtraction_dtypes(at::ScalarType a, at::ScalarType b) {
  TORCH_CHECK(a != at::kBool || b != at::kBool,
              "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
              "or `logical_xor()` operator instead.");
  TORCH_CHECK(a != at::kBool && b != at::kBool,
              "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
              "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
}

// add/sub's checks of alpha against the result dtype, made before anything runs.
inline void check_alpha(at::ScalarType result, const at::Scalar& alpha) {
  TORCH_CHECK(!alpha.isBoolean() || result == at::kBool,
              "Boolean alpha only supported for Boolean results.");
  TORCH_CHECK(at::isFloatingType(result) || at::isComplexType(result) ||
                  alpha.isIntegral(/*includeBool=*/true),
              "For integral input tensors, argument alpha must not be a floating point number.");
  TORCH_CHECK(at::isComplexType(result) || !alpha.isComplex(),
              "For non-complex input tensors, argument alpha must not be a complex number.");
}

// lerp computes in self's dtype and refuses an end, or a weight tensor with dimensions, of
// another dtype rather than promoting. `weight` is null for a Python-number weight.
inline void check_lerp_dtypes(const at::Tensor& self, const at::Tensor& end,
                              const at::Tensor* weight) {
  TORCH_CHECK(end.scalar_type() == self.scalar_type(), "expected dtype ", self.dtype(),
              " for `end` but got dtype ", end.dtype());
  TORCH_CHECK(
      weight == nullptr || weight->dim() == 0 || weight->scalar_type() == self.scalar_type(),
      "expected dtype ", self.dtype(), " for `weight` but got dtype ", weight->dtype());
}

// fill_ and masked_fill refuse a value their dtype cannot hold (300 into uint8, 1e40 into float,
// 1j into a real tensor) with c10's own conversion error, as the CPU does, instead of storing a
// wrapped value.
inline void check_value_fits(at::ScalarType dtype, const at::Scalar& value) {
#define OPENNEURON_CHECK_FITS(type, name) \
  case at::ScalarType::name:              \
    (void)value.to<type>();               \
    break;
  switch (dtype) {
    AT_FORALL_SCALAR_TYPES_AND3(Bool, Half, BFloat16, OPENNEURON_CHECK_FITS)
    default:
      break;
  }
#undef OPENNEURON_CHECK_FITS
}

// addcdiv refuses integer (or bool) tensor1 and tensor2 whatever self is: its old integer
// division was removed, and a true division would change results silently.
inline void check_addcdiv_dtypes(const at::Tensor& tensor1, const at::Tensor& tensor2) {
  TORCH_CHECK(!(at::isIntegralType(tensor1.scalar_type(), /*includeBool=*/true) &&
                at::isIntegralType(tensor2.scalar_type(), /*includeBool=*/true)),
              "Integer division with addcdiv is no longer supported, and in a future  release "
              "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
              "behavior can be implemented as (input + value * torch.trunc(tensor1 / "
              "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
              "tensor2) for float inputs. The future addcdiv behavior is just the latter "
              "implementation: (input + value * tensor1 / tensor2), for all dtypes.");
}

// The CPU's refusal of a result that an in-place self cannot hold (TensorIterator's safe-cast
// rule). Clamping by scalars names self's dtype as its C++ type ("long int"), as its own check
// does; every other op by its ScalarType ("Long").
inline void check_result_fits_self(at::ScalarType result, const at::Tensor& self,
                                   bool clamps_by_scalars) {
  if (at::canCast(result, self.scalar_type())) return;
  if (clamps_by_scalars) {
    TORCH_CHECK(false, "result type ", result, " can't be cast to the desired output type ",
                self.dtype());
  }
  TORCH_CHECK(false, "result type ", result, " can't be cast to the desired output type ",
              self.scalar_type());
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
c10::Device check_operand_devices(const char* name, c10::ArrayRef<at::Tensor> operands,
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
