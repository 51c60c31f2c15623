// The boxed pointwise kernel: argument plumbing, type promotion, output allocation and the
// host-fallback decision shared by every op in the elementwise registration table.
#include "aten/ops_elementwise_pointwise.h"

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>

#include <array>
#include <unordered_map>

#include "aten/adaptive_recording.h"
#include "aten/fallback.h"
#include "aten/op_helpers.h"
#include "aten/ops_elementwise_common.h"

namespace openneuron::bridge {

using kernels::PointwiseOp;
using namespace elementwise;

namespace {

bool dtype_allowed(uint8_t classes, at::ScalarType dtype) {
  if (dtype == at::kBool) return classes & kBool;
  if (at::isIntegralType(dtype, /*includeBool=*/false)) return classes & kIntegers;
  return classes & kFloats;
}

// Ops whose kernel choice depends on an argument: div's rounding mode, clamp's optional
// bounds, pow by a Python scalar, bitwise_not of bool.
struct Resolved {
  PointwiseOp op;
  ResultRule result;
};

}  // namespace

c10::Device elementwise::check_operand_devices(const char* name,
                                               const std::vector<at::Tensor>& operands,
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
  std::vector<at::Tensor>& operands = plan->operands;
  std::vector<bool> promotes;
  std::vector<bool> is_operand(num_args, false);
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
  for (const at::Tensor& t : operands) {
    if (!(t.is_cpu() && t.dim() == 0) && !is_native_compute_dtype(t.scalar_type())) native = false;
  }
  if (has_out && !is_native_compute_dtype(args[num_args - 1].toTensor().scalar_type()))
    native = false;
  if (in_place && !is_native_compute_dtype(operands.front().scalar_type())) native = false;
  if (!native) return false;

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
  if (spec.op == PointwiseOp::Where) {
    TORCH_CHECK(operands[0].scalar_type() == at::kBool,
                "where expected condition to be a boolean tensor, but got a tensor with dtype ",
                operands[0].scalar_type());
  }
  if (spec.op == PointwiseOp::MaskedFill) {
    TORCH_CHECK(operands[1].scalar_type() == at::kBool,
                "masked_fill_ only supports boolean masks, but got mask with dtype ",
                operands[1].scalar_type());
    TORCH_CHECK(operands[2].dim() == 0,
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
                operands[2].dim(), " dimension(s).");
  }
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
  auto args = torch::jit::last(*stack, num_args);
  // As TensorIterator, before either path: a written tensor in which one location holds
  // several elements (an expanded one) is refused; the CPU's masked_fill_ only warns.
  if ((in_place || has_out) && spec_.op != PointwiseOp::MaskedFill) {
    const c10::IValue& written = has_out ? args[num_args - 1] : args[0];
    if (written.isTensor()) at::assert_no_internal_overlap(written.toTensor());
  }
  PointwisePlan plan;
  if (!plan_pointwise(spec_, schema, args, &plan)) {
    host_fallback(op, stack);
    return;
  }
  std::vector<at::Tensor>& operands = plan.operands;
  const at::ScalarType result = plan.result;
  const at::ScalarType compute = plan.compute;
  const kernels::PointwiseParams params = plan.params;

  at::Tensor out;
  if (has_out) out = args[num_args - 1].toTensor();
  if (in_place) out = operands.front();
  const c10::Device device = check_operand_devices(name_.c_str(), operands, out);
  const c10::DeviceGuard guard(device);
  counter_->hit();

  at::DimVector shape;
  for (const at::Tensor& t : operands) shape = at::infer_size_dimvector(shape, t.sizes());
  if (in_place) {
    TORCH_CHECK(at::canCast(result, out.scalar_type()), "result type ", result,
                " can't be cast to the desired output type ", out.scalar_type());
    TORCH_CHECK(out.sizes().equals(shape), "output with shape ", out.sizes(),
                " doesn't match the broadcast shape ", c10::IntArrayRef(shape));
  } else if (has_out) {
    TORCH_CHECK(at::canCast(result, out.scalar_type()), "result type ", result,
                " can't be cast to the desired output type ", out.scalar_type());
    at::native::resize_output(out, shape);
  } else {
    c10::SmallVector<const at::Tensor*, 3> operand_pointers;
    for (const at::Tensor& t : operands) operand_pointers.push_back(&t);
    out = empty_elementwise_output(shape, operand_pointers,
                                   at::TensorOptions().dtype(result).device(device));
  }

  if (out.numel() > 0) {
    const at::ScalarType host_dtype = host_scalar_dtype(compute);
    std::vector<Operand> inputs;
    inputs.reserve(operands.size());
    for (const at::Tensor& t : operands) inputs.emplace_back(t, out.sizes(), host_dtype);
    const kernels::TensorView out_view = view_of(out);
    const kernels::DType compute_kernel = kernel_dtype(compute);
    const PointwiseOp kernel_op = plan.op;
    runtime::Stream& stream = stream_for(out);
    if (record_adaptive(stream, name_.c_str(), kernel_op, out_view, inputs.data(),
                        static_cast<int>(inputs.size()), compute_kernel, params)) {
      torch::jit::drop(*stack, num_args);
      torch::jit::push(*stack, out);
      return;
    }
    enqueue_sized(stream, name_.c_str(), out.numel(), [=]() mutable {
      std::array<kernels::TensorView, 3> views;
      for (size_t k = 0; k < inputs.size(); ++k) views[k] = inputs[k].bind();
      kernels::pointwise(kernel_op, out_view, views.data(), static_cast<int>(inputs.size()),
                         compute_kernel, params);
    });
  }
  torch::jit::drop(*stack, num_args);
  torch::jit::push(*stack, out);
}

}  // namespace openneuron::bridge
