// The boxed pointwise kernel: argument plumbing, type promotion, output allocation and the
// host-fallback decision shared by every op in the elementwise registration table.
#include "aten/ops/pointwise/ops_elementwise_pointwise.h"

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <array>
#include <limits>
#include <unordered_map>

#include "aten/adaptive/adaptive_recording.h"
#include "aten/core/host_access.h"
#include "aten/core/op_helpers.h"
#include "aten/core/runtime_errors.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/pointwise/ops_elementwise_common.h"
#include "kernels/shape/indexing.h"

namespace openneuron::bridge {

using kernels::PointwiseOp;
using namespace elementwise;

namespace {

// Ops whose kernel choice depends on an argument: div's rounding mode, clamp's optional
// bounds, pow by a Python scalar, bitwise_not of bool.
struct Resolved {
  PointwiseOp op;
  ResultRule result;
};

// softshrink's lambda lies in [0, the input dtype's max], as the CPU's and CUDA's meta check it.
void check_softshrink_lambda(at::ScalarType dtype, const at::Scalar& lambd) {
  const double value = lambd.toDouble();
  const auto check = [&](auto max) {
    TORCH_CHECK(value >= 0 && value <= static_cast<double>(max), "lambda must be in range [0, ",
                max, "] for input dtype ", dtype, ", but found ", lambd);
  };
  if (dtype == at::kHalf) {
    check(std::numeric_limits<c10::Half>::max());
  } else if (dtype == at::kBFloat16) {
    check(std::numeric_limits<c10::BFloat16>::max());
  } else if (dtype == at::kFloat) {
    check(std::numeric_limits<float>::max());
  } else {
    check(std::numeric_limits<double>::max());
  }
}

// Integer division and modulus by zero raise at the call, as the CPU does ("ZeroDivisionError");
// the queued kernel could only write a value. A device divisor is read after its stream has run
// the work queued before it, so the check costs a wait only when that work is pending.
void check_integer_divisor(PointwiseOp op, at::ScalarType compute,
                           c10::ArrayRef<at::Tensor> operands) {
  const bool divides = op == PointwiseOp::DivTrunc || op == PointwiseOp::DivFloor ||
                       op == PointwiseOp::Remainder || op == PointwiseOp::Fmod;
  if (!divides || operands.size() != 2 || !at::isIntegralType(compute, /*includeBool=*/false)) {
    return;
  }
  const at::Tensor readable = readable_on_host(operands[1]);
  TORCH_CHECK(kernels::count_nonzero(view_of(readable)) == readable.numel(), "ZeroDivisionError");
}

// Ops whose CPU kernels see a CPU-scalar operand (Python number, 0-dim CPU tensor) cast to a
// 16-bit common dtype first; the others (add/mul/div, floor division, min/max …) read it whole
// or give the same result either way. Found by comparing both against the CPU at bf16 and fp16.
bool rounds_cpu_scalars(PointwiseOp op) {
  switch (op) {
    case PointwiseOp::Fmod:
    case PointwiseOp::Remainder:
    case PointwiseOp::Atan2:
    case PointwiseOp::Xlogy:
    case PointwiseOp::Xlog1py:
    case PointwiseOp::SubAlpha:  // rsub, as sub
    case PointwiseOp::Pow:
    case PointwiseOp::Eq:
    case PointwiseOp::Ne:
    case PointwiseOp::Lt:
    case PointwiseOp::Le:
    case PointwiseOp::Gt:
    case PointwiseOp::Ge:
      return true;
    default:
      return false;
  }
}

// The checks and parameter roundings of the special-function ops (rsub, heaviside, polygamma,
// logit), as their CPU kernels make them before computing.
void check_special_arguments(PointwiseOp op, at::ScalarType result, at::ScalarType compute,
                             c10::ArrayRef<c10::IValue> args, c10::ArrayRef<at::Tensor> operands,
                             kernels::PointwiseParams* params) {
  if (op == PointwiseOp::SubAlpha) {
    // rsub(self, other, alpha) is other - alpha * self: sub's own checks and 16-bit rounding.
    check_subtraction_dtypes(operands[1].scalar_type(), operands[0].scalar_type());
    const at::Scalar alpha = args[2].toScalar();
    check_alpha(result, alpha);
    params->values[0] = kernel_scalar(rounded_to(alpha, result));
    params->present[0] = true;
  } else if (op == PointwiseOp::Heaviside) {
    TORCH_CHECK(operands[0].scalar_type() == operands[1].scalar_type(),
                "heaviside is not yet implemented for tensors with different dtypes. Expected ",
                operands[0].scalar_type(), ", but got ", operands[1].scalar_type(), " instead.");
  } else if (op == PointwiseOp::Polygamma) {
    TORCH_CHECK(params->values[0].i >= 0, "polygamma(n, x) does not support negative n.");
  } else if ((op == PointwiseOp::Logit || op == PointwiseOp::LogitBackward) && params->present[0] &&
             is_16bit_float(compute)) {
    // The CPU clamps a 16-bit input to [eps, 1 - eps] with both bounds in the input's dtype.
    const at::Scalar lo = rounded_to(at::Scalar(params->values[0].to_double()), compute);
    const at::Scalar hi = rounded_to(at::Scalar(1.0 - lo.toDouble()), compute);
    params->values[0] = kernel_scalar(lo);
    params->values[1] = kernel_scalar(hi);
    params->present[1] = true;
  }
}

// The CPU's refusal of an out= dtype, with its message, raised before anything is queued.
// where, nan_to_num and masked_fill check an exact dtype in their own words.
void check_out_dtype(const PointwiseSpec& spec, at::ScalarType result, const at::Tensor& out) {
  const at::ScalarType dtype = out.scalar_type();
  if (dtype == result) return;
  TORCH_CHECK(spec.op != PointwiseOp::Where, "Expected out type to be ", result, " but got ",
              dtype);
  TORCH_CHECK(spec.op != PointwiseOp::NanToNum, "nan_to_num: dtype of out: ", dtype,
              " should be same as input: ", result);
  TORCH_CHECK(spec.op != PointwiseOp::MaskedFill, "Expected out tensor to have dtype ",
              c10::scalarTypeToTypeMeta(result), ", but got ", out.dtype(), " instead");
  TORCH_CHECK(spec.out_dtype != OutDtype::Exact, "Found dtype ", dtype, " but expected ", result);
  TORCH_CHECK(at::canCast(result, dtype), "result type ", result,
              " can't be cast to the desired output type ", dtype);
}

// pow at ComplexHalf, which the CPU has no kernel for: computed in complex64 and rounded once, as
// CUDA's complex<float> arithmetic does. False (nothing done) for any other result dtype.
bool pow_through_complex64(const c10::FunctionSchema& schema, torch::jit::Stack* stack) {
  const size_t num_args = schema.arguments().size();
  const bool has_out = schema.arguments().back().is_out();
  const bool in_place = !has_out && schema.name().back() == '_';
  auto args = torch::jit::last(*stack, num_args);
  const c10::IValue& base = args[0];
  const c10::IValue& exponent = args[1];
  const at::ScalarType result =
      base.isTensor()
          ? (exponent.isTensor() ? at::result_type(base.toTensor(), exponent.toTensor())
                                 : at::result_type(base.toTensor(), exponent.toScalar()))
          : at::result_type(base.toScalar(), exponent.toTensor());
  if (result != at::kComplexHalf) return false;
  if (has_out || in_place) {
    // A real self or out= cannot hold the complex result (CUDA's kernel refuses it too).
    const at::Tensor& target = (has_out ? args[num_args - 1] : args[0]).toTensor();
    TORCH_CHECK(at::canCast(result, target.scalar_type()), "result type ", result,
                " can't be cast to the desired output type ", target.scalar_type());
  }
  const auto widened = [](const c10::IValue& v) {
    return v.isTensor() ? c10::IValue(v.toTensor().to(at::kComplexFloat)) : v;
  };
  const c10::IValue wide_base = widened(base), wide_exponent = widened(exponent);
  at::Tensor wide =
      wide_base.isTensor()
          ? (wide_exponent.isTensor() ? at::pow(wide_base.toTensor(), wide_exponent.toTensor())
                                      : at::pow(wide_base.toTensor(), wide_exponent.toScalar()))
          : at::pow(wide_base.toScalar(), wide_exponent.toTensor());
  at::Tensor out;
  if (has_out || in_place) {
    out = (has_out ? args[num_args - 1] : args[0]).toTensor();
    if (has_out) at::native::resize_output(out, wide.sizes());
    out.copy_(wide);
  } else {
    out = wide.to(at::kComplexHalf);
  }
  torch::jit::drop(*stack, num_args);
  torch::jit::push(*stack, out);
  return true;
}

// masked_fill_ into a self whose elements share memory (an expanded tensor): the CPU writes only
// the masked elements, one after another, so a location is filled if any of its elements is
// masked. The pointwise kernel writes every element, so this runs the CPU kernel on the device
// memory itself, after the streams have run the work queued before. False for any other self.
bool masked_fill_shared_elements(const c10::FunctionSchema& schema, torch::jit::Stack* stack) {
  if (schema.name() != "aten::masked_fill_") return false;
  auto args = torch::jit::last(*stack, 3);
  const at::Tensor self = args[0].toTensor();
  if (at::has_internal_overlap(self) != at::MemOverlap::Yes || !self.is_privateuseone()) {
    return false;
  }
  const at::Tensor mask = args[1].toTensor();
  const at::Scalar value = args[2].isTensor() ? args[2].toTensor().item() : args[2].toScalar();
  for (const at::Tensor* t : {&mask, &self}) {
    if (!t->is_privateuseone()) continue;
    const c10::DeviceGuard guard(t->device());
    OPENNEURON_RUNTIME_CALL(stream_for(*t).synchronize());
  }
  host_alias(self).masked_fill_(host_alias(mask), value);
  torch::jit::drop(*stack, 3);
  torch::jit::push(*stack, self);
  return true;
}

}  // namespace

void elementwise::check_written_overlap(const at::Tensor& out,
                                        c10::ArrayRef<const at::Tensor*> operands) {
  at::assert_no_internal_overlap(out);
  for (const at::Tensor* t : operands) {
    if (!(t->is_cpu() && t->dim() == 0)) at::assert_no_partial_overlap(out, *t);
  }
}

c10::Device elementwise::check_operand_devices(const char* name, c10::ArrayRef<at::Tensor> operands,
                                               const at::Tensor& out) {
  const at::Tensor* anchor = out.defined() ? &out : nullptr;
  for (const at::Tensor& t : operands) {
    if (!anchor && t.is_privateuseone()) anchor = &t;
  }
  TORCH_CHECK(anchor != nullptr, name, ": expected at least one neuron tensor");
  for (const at::Tensor& t : operands) (void)check_same_device(name, {anchor, &t});
  return anchor->device();
}

namespace {

std::unordered_map<std::string, PointwiseSpec>& spec_registry() {
  static auto* registry = new std::unordered_map<std::string, PointwiseSpec>();
  return *registry;
}

}  // namespace

const PointwiseSpec* find_pointwise_spec(const std::string& overload_name) {
  const auto& registry = spec_registry();
  const auto it = registry.find(overload_name);
  return it == registry.end() ? nullptr : &it->second;
}

void register_pointwise_spec(const std::string& overload_name, const PointwiseSpec& spec) {
  spec_registry()[overload_name] = spec;
}

PointwiseKernel::PointwiseKernel(PointwiseSpec spec, const std::string& op_name)
    : spec_(std::move(spec)),
      name_("aten::" + op_name),
      counter_(new NativeOpCounter(name_.c_str())) {}

bool plan_pointwise(const PointwiseSpec& spec, const c10::FunctionSchema& schema,
                    c10::ArrayRef<c10::IValue> args, PointwisePlan* plan) {
  const size_t num_args = schema.arguments().size();
  const bool has_out = schema.arguments().back().is_out();
  const bool in_place = !has_out && !schema.name().empty() && schema.name().back() == '_';

  // Operands: tensors, Python scalars (as wrapped tensors) or None (clamp's absent bounds).
  auto& operands = plan->operands;
  c10::SmallVector<bool, 3> promotes;
  c10::SmallVector<bool, 8> is_operand(num_args, false);
  bool scalar_second = false;
  for (size_t k = 0; k < spec.operand_args.size(); ++k) {
    const int pos = spec.operand_args[k];
    is_operand[pos] = true;
    const c10::IValue& value = args[pos];
    if (value.isNone()) continue;
    if (value.isTensor()) {
      operands.push_back(value.toTensor());
      plan->operand_args.push_back(pos);
    } else {
      operands.push_back(wrap_scalar(value.toScalar()));
      plan->operand_args.push_back(-1);
      if (k == 1) scalar_second = true;
    }
    promotes.push_back((spec.promote_mask >> k) & 1u);
  }
  kernels::PointwiseParams& params = plan->params;
  int num_params = 0;
  for (size_t pos = 0; pos < num_args; ++pos) {
    if (is_operand[pos] || (has_out && pos + 1 == num_args)) continue;
    if (num_params == 4) break;
    if (args[pos].isComplexDouble()) return false;  // e.g. lerp's weight: complex math on the host
    params.values[num_params] = scalar_param(args[pos], &params.present[num_params]);
    ++num_params;
  }

  Resolved resolved{spec.op, spec.result};
  if (spec.op == PointwiseOp::ClampBoth) {
    TORCH_CHECK(operands.size() > 1,
                "torch.clamp: At least one of 'min' or 'max' must not be None");
    if (operands.size() == 2) {
      resolved.op = args[1].isNone() ? PointwiseOp::ClampMax : PointwiseOp::ClampMin;
    }
  } else if (spec.op == PointwiseOp::Div && num_params > 0 && params.present[0]) {
    resolved.op = params.values[0].i == 2 ? PointwiseOp::DivTrunc : PointwiseOp::DivFloor;
    resolved.result = ResultRule::Common;
  }

  if (has_out && (spec.op == PointwiseOp::IsPosInf || spec.op == PointwiseOp::IsNegInf)) {
    TORCH_CHECK(args[num_args - 1].toTensor().scalar_type() == at::kBool,
                spec.op == PointwiseOp::IsPosInf ? "isposinf" : "isneginf",
                " does not support non-boolean outputs.");
  }
  // Native only for device-native dtypes the op supports; everything else runs on the host.
  at::native::ResultTypeState state{};
  for (size_t k = 0; k < operands.size(); ++k) {
    if (promotes[k]) state = at::native::update_result_type_state(operands[k], state);
  }
  const at::ScalarType promoted = at::native::result_type(state);
  const at::ScalarType result =
      result_dtype(resolved.result, promoted, operands.front().scalar_type());
  at::ScalarType compute = compute_dtype(resolved.result, promoted, result);
  if (resolved.op == PointwiseOp::BitwiseNot && compute == at::kBool) {
    resolved.op = PointwiseOp::LogicalNot;  // ~True is False for bool tensors
  }
  bool native = is_native_compute_dtype(result) && is_native_compute_dtype(compute) &&
                dtype_allowed(spec.dtypes, compute);
  // uint16/32/64 inputs of a floating computation are converted on the device first (the
  // kernels have no compute type for them), as TensorIterator casts them to the common dtype.
  const auto converted_first = [&](const at::Tensor& t) {
    return is_wide_unsigned(t.scalar_type()) && at::isFloatingType(compute) && !t.is_cpu();
  };
  for (const at::Tensor& t : operands) {
    if (!(t.is_cpu() && t.dim() == 0) && !is_native_compute_dtype(t.scalar_type()) &&
        !converted_first(t)) {
      native = false;
    }
  }
  if (has_out && !is_native_compute_dtype(args[num_args - 1].toTensor().scalar_type()))
    native = false;
  if (in_place && !is_native_compute_dtype(operands.front().scalar_type())) native = false;
  // nextafter steps in the result's own format, which the kernel reads from the output.
  if (spec.op == PointwiseOp::NextAfter && has_out &&
      args[num_args - 1].toTensor().scalar_type() != result) {
    native = false;
  }
  if (!native) return false;
  for (at::Tensor& t : operands) {
    if (converted_first(t)) t = t.to(compute);
  }

  if (is_16bit_float(compute)) {
    const auto is_cpu_scalar = [](const at::Tensor& t) { return t.is_cpu() && t.dim() == 0; };
    if (rounds_cpu_scalars(resolved.op)) {
      for (at::Tensor& t : operands) {
        if (is_cpu_scalar(t)) t = t.to(compute);
      }
    }
    // The CPU's floor and truncating division by a CPU scalar run in fp32 with the scalar whole
    // and round once (by a tensor they round every step, in the kernel's 16-bit path).
    const bool rounding_division =
        resolved.op == PointwiseOp::DivTrunc || resolved.op == PointwiseOp::DivFloor;
    if (rounding_division && is_cpu_scalar(operands[1])) compute = at::kFloat;
  }
  if (spec.op == PointwiseOp::Softshrink) check_softshrink_lambda(result, args[1].toScalar());
  if (spec.op == PointwiseOp::Threshold || spec.op == PointwiseOp::Hardshrink ||
      spec.op == PointwiseOp::HardshrinkBackward) {
    // The CPU compares in the input's dtype: a 16-bit input meets a bound rounded to it.
    for (int k = 0; k < num_params; ++k) {
      params.values[k] =
          kernel_scalar(rounded_to(args[spec.operand_args.size() + k].toScalar(), result));
    }
  }
  if (resolved.op == PointwiseOp::Pow && scalar_second) {
    // tensor ** python-scalar: the exponent is a parameter, so x**2 and x**0.5 take exact paths.
    TORCH_CHECK(!(at::isIntegralType(compute, true) && operands[1].item().toDouble() < 0),
                "Integers to negative integer powers are not allowed.");
    resolved.op = PointwiseOp::PowScalar;
    // The CPU rounds the exponent to a 16-bit result's dtype first, as add does its scalar.
    params.values[0] = kernel_scalar(rounded_to(operands[1].item(), result));
    params.present[0] = true;
    operands.pop_back();
    plan->operand_args.pop_back();
  }
  if (spec.op == PointwiseOp::Lerp || spec.op == PointwiseOp::LerpScalar) {
    check_lerp_dtypes(operands[0], operands[1],
                      spec.op == PointwiseOp::Lerp ? &operands[2] : nullptr);
  }
  if (spec.op == PointwiseOp::Addcdiv) check_addcdiv_dtypes(operands[1], operands[2]);
  if (spec.op == PointwiseOp::Clamp && operands[0].scalar_type() == at::kByte) {
    // hardtanh (the one user of Clamp) clamps integers by its limits truncated to integers.
    TORCH_CHECK(args[1].toScalar().toLong() >= 0 && args[2].toScalar().toLong() >= 0,
                "cannot do hardtanh on an unsigned type with negative limits");
  }
  if (spec.op == PointwiseOp::Where) {
    TORCH_CHECK(operands[0].scalar_type() == at::kBool,
                "where expected condition to be a boolean tensor, but got a tensor with dtype ",
                operands[0].scalar_type());
  }
  if (spec.op == PointwiseOp::MaskedFill) {
    if (plan->operand_args[2] < 0) check_value_fits(operands[0].scalar_type(), args[2].toScalar());
    TORCH_CHECK(operands[1].scalar_type() == at::kBool,
                "masked_fill_ only supports boolean masks, but got mask with dtype ",
                operands[1].scalar_type());
    TORCH_CHECK(operands[2].dim() == 0,
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
                operands[2].dim(), " dimension(s).");
  }
  check_special_arguments(spec.op, result, compute, args, operands, &params);
  plan->op = resolved.op;
  plan->result = result;
  plan->compute = compute;
  return true;
}

void PointwiseKernel::operator()(const c10::OperatorHandle& op, c10::DispatchKeySet,
                                 torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  const bool has_out = schema.arguments().back().is_out();
  const bool in_place = !has_out && !schema.name().empty() && schema.name().back() == '_';
  if (spec_.op == PointwiseOp::MaskedFill && masked_fill_shared_elements(schema, stack)) return;
  auto args = torch::jit::last(*stack, num_args);
  // masked_fill_ and threshold (idempotent; its CPU kernel turns the check off) write an
  // expanded self as the CPU does; the others are checked first, as TensorIterator does, so
  // that the host fallback's copies cannot hide an overlap.
  const bool writes_shared_elements =
      spec_.op == PointwiseOp::MaskedFill || spec_.op == PointwiseOp::Threshold;
  if ((has_out || in_place) && !writes_shared_elements) {
    c10::SmallVector<const at::Tensor*, 4> inputs;
    for (size_t k = 0; k + (has_out ? 1 : 0) < num_args; ++k) {
      if (args[k].isTensor()) inputs.push_back(&args[k].toTensor());
    }
    check_written_overlap((has_out ? args[num_args - 1] : args[0]).toTensor(), inputs);
  }
  PointwisePlan plan;
  if (!plan_pointwise(spec_, schema, args, &plan)) {
    if (spec_.op == PointwiseOp::Pow && pow_through_complex64(schema, stack)) return;
    host_fallback(op, stack);
    return;
  }
  auto& operands = plan.operands;
  const at::ScalarType result = plan.result;

  at::Tensor out;
  if (has_out) out = args[num_args - 1].toTensor();
  if (in_place) out = operands.front();
  const c10::Device device = check_operand_devices(name_.c_str(), operands, out);
  const c10::DeviceGuard guard(device);
  counter_->hit();

  at::DimVector shape;
  for (const at::Tensor& t : operands) shape = at::infer_size_dimvector(shape, t.sizes());
  c10::SmallVector<const at::Tensor*, 3> operand_pointers;
  for (const at::Tensor& t : operands) operand_pointers.push_back(&t);
  const auto new_output = [&] {
    return empty_elementwise_output(shape, operand_pointers,
                                    at::TensorOptions().dtype(result).device(device));
  };
  if (in_place) {
    const bool clamps_by_scalars =
        spec_.out_dtype == OutDtype::Exact &&
        (spec_.op == PointwiseOp::ClampMin || spec_.op == PointwiseOp::ClampMax ||
         spec_.op == PointwiseOp::ClampBoth);
    check_result_fits_self(result, out, clamps_by_scalars);
    // The CPU's masked_fill_ refuses a mask that shares part of self's memory.
    if (spec_.op == PointwiseOp::MaskedFill) at::assert_no_partial_overlap(out, operands[1]);
    TORCH_CHECK(out.sizes().equals(shape), "output with shape ", out.sizes(),
                " doesn't match the broadcast shape ", c10::IntArrayRef(shape));
  } else if (has_out) {
    check_out_dtype(spec_, result, out);
    resize_elementwise_out(out, shape, operand_pointers);
  } else {
    out = new_output();
  }

  if (out.numel() > 0) {
    check_integer_divisor(plan.op, plan.compute, operands);
    // The CPU computes in the result dtype and casts into out=, so a wider out= (int64 for a
    // uint8 result, fp32 for bf16) still sees the result dtype's wrap-around or rounding.
    const bool staged = has_out && out.scalar_type() != result;
    const at::Tensor target = staged ? new_output() : out;
    launch(plan, target);
    if (staged) out.copy_(target);
  }
  torch::jit::drop(*stack, num_args);
  torch::jit::push(*stack, out);
}

void PointwiseKernel::launch(const PointwisePlan& plan, const at::Tensor& out) {
  const at::ScalarType host_dtype = host_scalar_dtype(plan.compute);
  c10::SmallVector<Operand, 3> inputs;  // copied into the work: no heap allocation per op
  for (const at::Tensor& t : plan.operands) inputs.emplace_back(t, out.sizes(), host_dtype);
  const kernels::TensorView out_view = view_of(out);
  const kernels::DType compute_kernel = kernel_dtype(plan.compute);
  const PointwiseOp kernel_op = plan.op;
  const kernels::PointwiseParams params = plan.params;
  runtime::Stream& stream = stream_for(out);
  if (record_adaptive(stream, name_.c_str(), kernel_op, out_view, inputs.data(),
                      static_cast<int>(inputs.size()), compute_kernel, params)) {
    return;
  }
  enqueue_sized(stream, name_.c_str(), out.numel(), [=]() mutable {
    std::array<kernels::TensorView, 3> views;
    for (size_t k = 0; k < inputs.size(); ++k) views[k] = inputs[k].bind();
    kernels::pointwise(kernel_op, out_view, views.data(), static_cast<int>(inputs.size()),
                       compute_kernel, params);
  });
}

}  // namespace openneuron::bridge
