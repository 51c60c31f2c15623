// Elementwise arithmetic, fill and relu on the device.
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/add.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/fill.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/result_type_native.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/threshold_backward.h>
#include <ATen/ops/view_as_real.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/MaybeOwned.h>

#include <cstring>

#include "aten/adaptive/adaptive_recording.h"
#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/same_width_bits.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/ops.h"
#include "aten/ops/pointwise/ops_elementwise_common.h"
#include "aten/ops/pointwise/ops_elementwise_pointwise.h"
#include "kernels/pointwise/cast.h"
#include "kernels/pointwise/pointwise.h"

namespace openneuron::bridge {

namespace {

// The four arithmetic ops with typed registrations here; they run on the pointwise engine.
enum class BinaryOp { Add, Sub, Mul, Div };

at::ScalarType binary_result_type(BinaryOp op, const at::Tensor& a, const at::Tensor& b) {
  // The native function itself: the dispatcher's round trip costs as much as a small add.
  at::ScalarType type = at::native::result_type(a, b);
  if (op == BinaryOp::Sub) elementwise::check_subtraction_dtypes(a.scalar_type(), b.scalar_type());
  // True division of integers yields the default float type, as on every device.
  if (op == BinaryOp::Div && at::isIntegralType(type, /*includeBool=*/true)) {
    type = c10::typeMetaToScalarType(c10::get_default_dtype());
  }
  return type;
}

kernels::PointwiseOp to_pointwise(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return kernels::PointwiseOp::AddAlpha;
    case BinaryOp::Sub:
      return kernels::PointwiseOp::SubAlpha;
    case BinaryOp::Mul:
      return kernels::PointwiseOp::Mul;
    case BinaryOp::Div:
      return kernels::PointwiseOp::Div;
  }
  TORCH_INTERNAL_ASSERT(false, "unknown binary op");
}

// PyTorch's CPU add and sub round a host scalar operand and alpha to a 16-bit result's dtype
// first (then compute in fp32 and round once); mul and div keep them in full precision.
bool rounds_host_scalars(BinaryOp op, at::ScalarType result) {
  return (op == BinaryOp::Add || op == BinaryOp::Sub) && elementwise::is_16bit_float(result);
}

// out = op(a, b) where out already has the broadcast shape and a dtype the result casts to.
// Runs on the pointwise engine (vectorised, multi-threaded for large tensors).
void launch_binary(const char* name, BinaryOp op, const at::Tensor& a, const at::Tensor& b,
                   const at::Scalar& alpha, const at::Tensor& out) {
  if (out.numel() == 0) return;
  const kernels::TensorView out_view = view_of(out);
  // Host scalars keep full compute precision (fp32 even for 16-bit outputs), as on CPU, but
  // for add and sub (rounds_host_scalars).
  const bool rounds_scalars = rounds_host_scalars(op, out.scalar_type());
  const at::ScalarType host_dtype = rounds_scalars                          ? out.scalar_type()
                                    : at::isFloatingType(out.scalar_type()) ? at::kFloat
                                                                            : at::kLong;
  // Built in place (each holds a TensorView of about 1 KB): copied only into queued work.
  const Operand operands[2] = {Operand(a, out.sizes(), host_dtype),
                               Operand(b, out.sizes(), host_dtype)};
  kernels::PointwiseParams params;
  params.values[0] =
      kernel_scalar(rounds_scalars ? elementwise::rounded_to(alpha, out.scalar_type()) : alpha);
  params.present[0] = true;
  const kernels::PointwiseOp pointwise_op = to_pointwise(op);
  runtime::Stream& stream = stream_for(out);
  if (record_adaptive(stream, name, pointwise_op, out_view, operands, 2, out_view.dtype, params)) {
    return;
  }
  enqueue_sized(stream, name, out.numel(),
                [pointwise_op, out_view, lhs = operands[0], rhs = operands[1], params]() mutable {
                  const kernels::TensorView inputs[2] = {lhs.bind(), rhs.bind()};
                  kernels::pointwise(pointwise_op, out_view, inputs, 2, out_view.dtype, params);
                });
}

// uint16/32/64 operands of a floating result are converted to it on the device first, as
// TensorIterator casts its inputs to the common dtype.
bool converted_first(const at::Tensor& t, at::ScalarType result) {
  return is_wide_unsigned(t.scalar_type()) && at::isFloatingType(result) && !t.is_cpu();
}

bool binary_is_native(const at::Tensor& a, const at::Tensor& b, at::ScalarType result) {
  const auto usable = [result](const at::Tensor& t) {
    return all_native_dtypes({&t}) || converted_first(t, result);
  };
  return usable(a) && usable(b) && is_native_compute_dtype(result);
}

// Borrowed unless converted: copying a tensor that Python holds takes the GIL (PyTorch keeps its
// Python object alive while C++ shares it), which costs more than a small op itself.
c10::MaybeOwned<at::Tensor> in_compute_dtype(const at::Tensor& t, at::ScalarType result) {
  return converted_first(t, result) ? c10::MaybeOwned<at::Tensor>::owned(t.to(result))
                                    : c10::MaybeOwned<at::Tensor>::borrowed(t);
}

// `result` is binary_result_type(op, a, b), which the caller has already computed.
at::Tensor binary_functional(const char* name, BinaryOp op, const at::Tensor& a_in,
                             const at::Tensor& b_in, const at::Scalar& alpha,
                             at::ScalarType result) {
  const auto a_owned = in_compute_dtype(a_in, result), b_owned = in_compute_dtype(b_in, result);
  const at::Tensor &a = *a_owned, &b = *b_owned;
  const c10::Device device = check_same_device(name, {&a, &b});
  const c10::DeviceGuard guard(device);
  const at::DimVector shape = at::infer_size_dimvector(a.sizes(), b.sizes());
  at::Tensor out =
      empty_elementwise_output(shape, {&a, &b}, at::TensorOptions().dtype(result).device(device));
  launch_binary(name, op, a, b, alpha, out);
  return out;
}

at::Tensor& binary_into(const char* name, BinaryOp op, const at::Tensor& a_in,
                        const at::Tensor& b_in, const at::Scalar& alpha, at::ScalarType result,
                        at::Tensor& out) {
  const auto a_owned = in_compute_dtype(a_in, result), b_owned = in_compute_dtype(b_in, result);
  const at::Tensor &a = *a_owned, &b = *b_owned;
  const c10::Device device = check_same_device(name, {&a, &b, &out});
  const c10::DeviceGuard guard(device);
  TORCH_CHECK(at::canCast(result, out.scalar_type()), "result type ", result,
              " can't be cast to the desired output type ", out.scalar_type());
  const at::DimVector shape = at::infer_size_dimvector(a.sizes(), b.sizes());
  if (!out.is_same(a)) {
    resize_elementwise_out(out, shape, {&a, &b});
  } else {
    TORCH_CHECK(out.sizes().equals(shape), "output with shape ", out.sizes(),
                " doesn't match the broadcast shape ", c10::IntArrayRef(shape));
  }
  if (!out.is_same(a) && out.scalar_type() != result && out.numel() > 0) {
    // Computed in the result dtype and cast, as the CPU does (a wider out= keeps its rounding;
    // in place, self takes part in the promotion, so it is never wider than the result).
    at::Tensor staged =
        empty_elementwise_output(shape, {&a, &b}, at::TensorOptions().dtype(result).device(device));
    launch_binary(name, op, a, b, alpha, staged);
    out.copy_(staged);
    return out;
  }
  launch_binary(name, op, a, b, alpha, out);
  return out;
}

}  // namespace

at::Tensor& fill_scalar_(at::Tensor& self, const at::Scalar& value) {
  if (!all_native_dtypes({&self}) && self.scalar_type() != at::kDouble) {
    // Formats the kernels do not compute in: the CPU converts the value once, and its bits
    // fill the device tensor (a value the CPU cannot convert falls back and raises there).
    if (self.scalar_type() == at::kComplexDouble) {
      // Two 8-byte halves, each filled with its double's bits (views keep any strides, even
      // overlapping ones, which fill_ accepts as CUDA's and the CPU's do).
      const at::Tensor halves = at::view_as_real(self);
      const c10::complex<double> complex_value = value.toComplexDouble();
      for (int part = 0; part < 2; ++part) {
        const double half = part == 0 ? complex_value.real() : complex_value.imag();
        int64_t half_bits = 0;
        std::memcpy(&half_bits, &half, sizeof(half_bits));
        at::Tensor half_view = same_width_bits(halves.select(-1, part));
        fill_scalar_(half_view, half_bits);
      }
      return self;
    }
    at::Tensor bits = same_width_bits(self);
    if (!bits.defined() || self.scalar_type() == at::kFloat4_e2m1fn_x2) {
      return OPENNEURON_FALLBACK(fill__Scalar, self, value);
    }
    const at::Tensor converted =
        at::scalar_tensor(value, at::TensorOptions().dtype(self.scalar_type()));
    fill_scalar_(bits, same_width_bits(converted).item());
    return self;
  }
  elementwise::check_value_fits(self.scalar_type(), value);
  OPENNEURON_NATIVE_OP("aten::fill_.Scalar");
  if (self.numel() == 0) return self;
  const c10::DeviceGuard guard(self.device());
  const kernels::TensorView view = elementwise_view_of(self);
  const kernels::Scalar fill_value = kernel_scalar(value);
  enqueue_sized(stream_for(self), "aten::fill_", self.numel(),
                [view, fill_value] { kernels::fill(view, fill_value); });
  return self;
}

at::Tensor& fill_tensor_(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ",
              value.dim(), " dimensions.");
  return fill_scalar_(self, value.item());
}

#define OPENNEURON_BINARY_WITH_ALPHA(fn, op_enum, aten_name, functional, inplace, out_variant)   \
  at::Tensor fn(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {      \
    const at::ScalarType result = binary_result_type(op_enum, self, other);                      \
    elementwise::check_alpha(result, alpha);                                                     \
    if (!binary_is_native(self, other, result)) {                                                \
      return OPENNEURON_FALLBACK(functional, self, other, alpha);                                \
    }                                                                                            \
    OPENNEURON_NATIVE_OP("aten::" aten_name ".Tensor");                                          \
    return binary_functional("aten::" aten_name, op_enum, self, other, alpha, result);           \
  }                                                                                              \
  at::Tensor& fn##_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {        \
    const at::ScalarType result = binary_result_type(op_enum, self, other);                      \
    elementwise::check_alpha(result, alpha);                                                     \
    elementwise::check_written_overlap(self, {&self, &other});                                   \
    if (!binary_is_native(self, other, result)) {                                                \
      return OPENNEURON_FALLBACK(inplace, self, other, alpha);                                   \
    }                                                                                            \
    OPENNEURON_NATIVE_OP("aten::" aten_name "_.Tensor");                                         \
    return binary_into("aten::" aten_name "_", op_enum, self, other, alpha, result, self);       \
  }                                                                                              \
  at::Tensor& fn##_out(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha, \
                       at::Tensor& out) {                                                        \
    const at::ScalarType result = binary_result_type(op_enum, self, other);                      \
    elementwise::check_alpha(result, alpha);                                                     \
    elementwise::check_written_overlap(out, {&self, &other});                                    \
    if (!binary_is_native(self, other, result) || !all_native_dtypes({&out})) {                  \
      return OPENNEURON_FALLBACK(out_variant, self, other, alpha, out);                          \
    }                                                                                            \
    OPENNEURON_NATIVE_OP("aten::" aten_name ".out");                                             \
    return binary_into("aten::" aten_name ".out", op_enum, self, other, alpha, result, out);     \
  }

#define OPENNEURON_BINARY(fn, op_enum, aten_name, functional, inplace, out_variant)        \
  at::Tensor fn(const at::Tensor& self, const at::Tensor& other) {                         \
    const at::ScalarType result = binary_result_type(op_enum, self, other);                \
    if (!binary_is_native(self, other, result)) {                                          \
      return OPENNEURON_FALLBACK(functional, self, other);                                 \
    }                                                                                      \
    OPENNEURON_NATIVE_OP("aten::" aten_name ".Tensor");                                    \
    return binary_functional("aten::" aten_name, op_enum, self, other, 1, result);         \
  }                                                                                        \
  at::Tensor& fn##_(at::Tensor& self, const at::Tensor& other) {                           \
    elementwise::check_written_overlap(self, {&self, &other});                             \
    const at::ScalarType result = binary_result_type(op_enum, self, other);                \
    if (!binary_is_native(self, other, result)) {                                          \
      return OPENNEURON_FALLBACK(inplace, self, other);                                    \
    }                                                                                      \
    OPENNEURON_NATIVE_OP("aten::" aten_name "_.Tensor");                                   \
    return binary_into("aten::" aten_name "_", op_enum, self, other, 1, result, self);     \
  }                                                                                        \
  at::Tensor& fn##_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) { \
    elementwise::check_written_overlap(out, {&self, &other});                              \
    const at::ScalarType result = binary_result_type(op_enum, self, other);                \
    if (!binary_is_native(self, other, result) || !all_native_dtypes({&out})) {            \
      return OPENNEURON_FALLBACK(out_variant, self, other, out);                           \
    }                                                                                      \
    OPENNEURON_NATIVE_OP("aten::" aten_name ".out");                                       \
    return binary_into("aten::" aten_name ".out", op_enum, self, other, 1, result, out);   \
  }

OPENNEURON_BINARY_WITH_ALPHA(add, BinaryOp::Add, "add", add_Tensor, add__Tensor, add_out)
OPENNEURON_BINARY_WITH_ALPHA(sub, BinaryOp::Sub, "sub", sub_Tensor, sub__Tensor, sub_out)
OPENNEURON_BINARY(mul, BinaryOp::Mul, "mul", mul_Tensor, mul__Tensor, mul_out)
OPENNEURON_BINARY(div, BinaryOp::Div, "div", div_Tensor, div__Tensor, div_out)

namespace {

void launch_relu(const at::Tensor& self, const at::Tensor& out) {
  if (out.numel() == 0) return;
  const kernels::TensorView in_view = view_of(self);
  const kernels::TensorView out_view = view_of(out);
  const kernels::DType compute = kernel_dtype(out.scalar_type());
  runtime::Stream& stream = stream_for(out);
  if (record_adaptive(stream, "aten::relu", kernels::PointwiseOp::Relu, out_view, &in_view, 1,
                      compute, {})) {
    return;
  }
  enqueue_sized(stream, "aten::relu", out.numel(), [out_view, in_view, compute] {
    kernels::pointwise(kernels::PointwiseOp::Relu, out_view, &in_view, 1, compute, {});
  });
}

}  // namespace

at::Tensor relu(const at::Tensor& self) {
  if (!all_native_dtypes({&self}) || self.scalar_type() == at::kBool) {
    return OPENNEURON_FALLBACK(relu, self);
  }
  OPENNEURON_NATIVE_OP("aten::relu");
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = empty_elementwise_output(self.sizes(), {&self}, self.options());
  launch_relu(self, out);
  return out;
}

at::Tensor& relu_(at::Tensor& self) {
  elementwise::check_written_overlap(self, {});
  if (!all_native_dtypes({&self}) || self.scalar_type() == at::kBool) {
    return OPENNEURON_FALLBACK(relu_, self);
  }
  OPENNEURON_NATIVE_OP("aten::relu_");
  const c10::DeviceGuard guard(self.device());
  launch_relu(self, self);
  return self;
}

at::Tensor& threshold_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                   const at::Scalar& threshold, at::Tensor& grad_input) {
  if (!all_native_dtypes({&grad_output, &self, &grad_input})) {
    return OPENNEURON_FALLBACK(threshold_backward_grad_input, grad_output, self, threshold,
                               grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::threshold_backward.grad_input");
  const c10::Device device = check_same_device("aten::threshold_backward", {&grad_output, &self});
  const c10::DeviceGuard guard(device);
  const at::ScalarType result = at::result_type(grad_output, self);
  TORCH_CHECK(at::canCast(result, grad_input.scalar_type()), "result type ", result,
              " can't be cast to the desired output type ", grad_input.scalar_type());
  const auto shape = at::infer_size(grad_output.sizes(), self.sizes());
  at::native::resize_output(grad_input, shape);
  if (grad_input.numel() == 0) return grad_input;
  const kernels::TensorView out_view = view_of(grad_input);
  const kernels::TensorView grad_view = broadcast_view(grad_output, shape);
  const kernels::TensorView self_view = broadcast_view(self, shape);
  kernels::PointwiseParams params;
  params.values[0] = kernel_scalar(threshold);
  params.present[0] = true;
  const kernels::DType compute = kernel_dtype(grad_input.scalar_type());
  runtime::Stream& stream = stream_for(grad_input);
  const kernels::TensorView inputs[2] = {grad_view, self_view};
  if (record_adaptive(stream, "aten::threshold_backward", kernels::PointwiseOp::ThresholdBackward,
                      out_view, inputs, 2, compute, params)) {
    return grad_input;
  }
  enqueue_sized(stream, "aten::threshold_backward", grad_input.numel(), [=] {
    const kernels::TensorView inputs[2] = {grad_view, self_view};
    kernels::pointwise(kernels::PointwiseOp::ThresholdBackward, out_view, inputs, 2, compute,
                       params);
  });
  return grad_input;
}

at::Tensor threshold_backward(const at::Tensor& grad_output, const at::Tensor& self,
                              const at::Scalar& threshold) {
  if (!all_native_dtypes({&grad_output, &self})) {
    return OPENNEURON_FALLBACK(threshold_backward, grad_output, self, threshold);
  }
  const c10::DeviceGuard guard(self.device());
  // Laid out as the CPU kernel's TensorIterator (self before grad_output) and the meta kernel,
  // in the operands' promoted dtype (a bf16 gradient of an fp32 input is fp32).
  at::Tensor grad_input = empty_elementwise_output(
      at::infer_size(grad_output.sizes(), self.sizes()), {&self, &grad_output},
      grad_output.options().dtype(at::result_type(grad_output, self)));
  return threshold_backward_out(grad_output, self, threshold, grad_input);
}

}  // namespace openneuron::bridge

namespace openneuron::bridge {

bool plan_typed_elementwise(const std::string& overload_name, c10::ArrayRef<c10::IValue> args,
                            PointwisePlan* plan) {
  auto operand = [&](size_t k) {
    const at::Tensor& t = args[k].toTensor();
    plan->operands.push_back(t);
    plan->operand_args.push_back(
        t.unsafeGetTensorImpl()->is_wrapped_number() ? -1 : static_cast<int>(k));
    return t;
  };
  const struct {
    const char* name;
    BinaryOp op;
  } binaries[] = {{"add.Tensor", BinaryOp::Add},
                  {"sub.Tensor", BinaryOp::Sub},
                  {"mul.Tensor", BinaryOp::Mul},
                  {"div.Tensor", BinaryOp::Div}};
  for (const auto& binary : binaries) {
    if (overload_name != binary.name) continue;
    const at::Tensor a = operand(0), b = operand(1);
    const at::ScalarType result = binary_result_type(binary.op, a, b);
    if (!binary_is_native(a, b, result)) return false;
    for (at::Tensor& t : plan->operands) {
      if (converted_first(t, result)) t = t.to(result);
    }
    plan->op = to_pointwise(binary.op);
    plan->result = plan->compute = result;
    at::Scalar alpha = args.size() > 2 ? args[2].toScalar() : at::Scalar(int64_t{1});
    if (rounds_host_scalars(binary.op, result)) {  // as launch_binary does
      alpha = elementwise::rounded_to(alpha, result);
      for (size_t k = 0; k < 2; ++k) {
        if (plan->operand_args[k] < 0) plan->operands[k] = plan->operands[k].to(result);
      }
    }
    plan->params.values[0] = kernel_scalar(alpha);
    plan->params.present[0] = true;
    return true;
  }
  if (overload_name == "relu") {
    const at::Tensor self = operand(0);
    if (!all_native_dtypes({&self}) || self.scalar_type() == at::kBool) return false;
    plan->op = kernels::PointwiseOp::Relu;
    plan->result = plan->compute = self.scalar_type();
    return true;
  }
  if (overload_name == "threshold_backward") {
    const at::Tensor grad = operand(0), self = operand(1);
    if (!all_native_dtypes({&grad, &self})) return false;
    plan->op = kernels::PointwiseOp::ThresholdBackward;
    plan->result = plan->compute = at::result_type(grad, self);
    plan->params.values[0] = kernel_scalar(args[2].toScalar());
    plan->params.present[0] = true;
    return true;
  }
  return false;
}

}  // namespace openneuron::bridge
