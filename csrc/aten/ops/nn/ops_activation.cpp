// Activations whose ATen form is not one result from one TensorIterator: log_sigmoid (a result
// and a buffer), glu (two halves of one input), prelu's backward (two results). Each runs the
// kernel library's pointwise ops over views, so 16-bit values are computed in fp32 and rounded
// once. hardshrink, softshrink and threshold are plain pointwise specs
// (register_elementwise.cpp).
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/glu_backward_native.h>
#include <ATen/ops/glu_native.h>
#include <c10/core/DeviceGuard.h>

#include <array>
#include <initializer_list>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/nn/nn_helpers.h"
#include "aten/ops/nn/ops_nn.h"
#include "kernels/pointwise/pointwise.h"

namespace openneuron::bridge {

namespace {

using kernels::PointwiseOp;

// Queues out = op(inputs...), each input broadcast to out's shape; fp32 compute for 16-bit.
void launch(const char* name, PointwiseOp op, const at::Tensor& out,
            std::initializer_list<at::Tensor> inputs) {
  if (out.numel() == 0) return;
  std::array<kernels::TensorView, 3> views{};
  int count = 0;
  for (const at::Tensor& input : inputs) views[count++] = broadcast_view(input, out.sizes());
  const kernels::TensorView out_view = view_of(out);
  const kernels::DType compute = kernel_dtype(out.scalar_type());
  enqueue_sized(stream_for(out), name, out.numel(),
                [=] { kernels::pointwise(op, out_view, views.data(), count, compute, {}); });
}

// The two halves glu splits `self` into along `dim` (CUDA's and the CPU's checks first).
std::array<at::Tensor, 2> glu_halves(const at::Tensor& self, int64_t dim) {
  TORCH_CHECK(self.dim() > 0, "glu does not support scalars because halving size must be even");
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  const int64_t size = self.size(wrapped);
  TORCH_CHECK(size % 2 == 0, "Halving dimension must be even, but dimension ", wrapped, " is size ",
              size);
  return {self.narrow(wrapped, 0, size / 2), self.narrow(wrapped, size / 2, size / 2)};
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> log_sigmoid_forward(const at::Tensor& self) {
  if (!nn::all_nn_dtypes({&self})) return OPENNEURON_FALLBACK(log_sigmoid_forward, self);
  OPENNEURON_NATIVE_OP("aten::log_sigmoid_forward");
  const c10::DeviceGuard guard(self.device());
  // As CUDA: the buffer the CPU kernel fills for its backward stays empty.
  at::Tensor out = empty_elementwise_output(self.sizes(), {&self}, self.options());
  launch("aten::log_sigmoid_forward", PointwiseOp::LogSigmoid, out, {self});
  return {out, at::empty({0}, self.options())};
}

std::tuple<at::Tensor&, at::Tensor&> log_sigmoid_forward_out(const at::Tensor& self,
                                                             at::Tensor& output,
                                                             at::Tensor& buffer) {
  if (!nn::all_nn_dtypes({&self, &output})) {
    return OPENNEURON_FALLBACK(log_sigmoid_forward_output, self, output, buffer);
  }
  OPENNEURON_NATIVE_OP("aten::log_sigmoid_forward.output");
  check_same_device("aten::log_sigmoid_forward", {&self, &output});
  TORCH_CHECK(output.scalar_type() == self.scalar_type(), "Expected out tensor to have dtype ",
              self.scalar_type(), ", but got ", output.scalar_type(), " instead");
  const c10::DeviceGuard guard(self.device());
  at::native::resize_output(output, self.sizes());
  launch("aten::log_sigmoid_forward", PointwiseOp::LogSigmoid, output, {self});
  return {output, buffer};
}

at::Tensor& log_sigmoid_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                     const at::Tensor& buffer, at::Tensor& grad_input) {
  if (!nn::all_nn_dtypes({&grad_output, &self, &grad_input})) {
    return OPENNEURON_FALLBACK(log_sigmoid_backward_grad_input, grad_output, self, buffer,
                               grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::log_sigmoid_backward.grad_input");
  check_same_device("aten::log_sigmoid_backward", {&grad_output, &self, &grad_input});
  const c10::DeviceGuard guard(self.device());
  const at::ScalarType result = at::result_type(grad_output, self);
  TORCH_CHECK(at::canCast(result, grad_input.scalar_type()), "result type ", result,
              " can't be cast to the desired output type ", grad_input.scalar_type());
  at::native::resize_output(grad_input, at::infer_size(grad_output.sizes(), self.sizes()));
  launch("aten::log_sigmoid_backward", PointwiseOp::LogSigmoidBackward, grad_input,
         {grad_output, self});
  return grad_input;
}

at::Tensor log_sigmoid_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                const at::Tensor& buffer) {
  if (!nn::all_nn_dtypes({&grad_output, &self})) {
    return OPENNEURON_FALLBACK(log_sigmoid_backward, grad_output, self, buffer);
  }
  const c10::DeviceGuard guard(self.device());
  // Contiguous, as PyTorch's meta kernel gives it (a transposed input included).
  at::Tensor grad_input =
      at::empty(at::infer_size(grad_output.sizes(), self.sizes()),
                grad_output.options().dtype(at::result_type(grad_output, self)));
  return log_sigmoid_backward_out(grad_output, self, buffer, grad_input);
}

at::Tensor& glu_out(const at::Tensor& self, int64_t dim, at::Tensor& out) {
  const auto halves = glu_halves(self, dim);
  if (!nn::all_nn_dtypes({&self, &out})) return OPENNEURON_FALLBACK(glu_out, self, dim, out);
  OPENNEURON_NATIVE_OP("aten::glu.out");
  check_same_device("aten::glu", {&self, &out});
  TORCH_CHECK(at::canCast(self.scalar_type(), out.scalar_type()), "result type ",
              self.scalar_type(), " can't be cast to the desired output type ", out.scalar_type());
  const c10::DeviceGuard guard(self.device());
  at::native::resize_output(out, halves[0].sizes());
  launch("aten::glu", PointwiseOp::SigmoidGate, out, {halves[0], halves[1]});
  return out;
}

at::Tensor glu(const at::Tensor& self, int64_t dim) {
  const auto halves = glu_halves(self, dim);
  if (!nn::all_nn_dtypes({&self})) return OPENNEURON_FALLBACK(glu, self, dim);
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = empty_elementwise_output(halves[0].sizes(), {&halves[0]}, self.options());
  return glu_out(self, dim, out);
}

at::Tensor& glu_backward_out(const at::Tensor& grad_output, const at::Tensor& self, int64_t dim,
                             at::Tensor& grad_input) {
  const auto halves = glu_halves(self, dim);
  if (!nn::all_nn_dtypes({&grad_output, &self, &grad_input})) {
    return OPENNEURON_FALLBACK(glu_backward_grad_input, grad_output, self, dim, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::glu_backward.grad_input");
  check_same_device("aten::glu_backward", {&grad_output, &self, &grad_input});
  TORCH_CHECK(grad_output.sizes() == halves[0].sizes(), "glu_backward: grad_output of shape ",
              grad_output.sizes(), " does not match the output's shape ", halves[0].sizes());
  const c10::DeviceGuard guard(self.device());
  at::native::resize_output(grad_input, self.sizes());
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  const int64_t half = self.size(wrapped) / 2;
  // d/da = g * sigmoid(b); d/db = g * a * sigmoid(b) * (1 - sigmoid(b)).
  launch("aten::glu_backward", PointwiseOp::SigmoidGate, grad_input.narrow(wrapped, 0, half),
         {grad_output, halves[1]});
  launch("aten::glu_backward", PointwiseOp::SigmoidGateBackward,
         grad_input.narrow(wrapped, half, half), {grad_output, halves[0], halves[1]});
  return grad_input;
}

at::Tensor glu_backward(const at::Tensor& grad_output, const at::Tensor& self, int64_t dim) {
  glu_halves(self, dim);
  if (!nn::all_nn_dtypes({&grad_output, &self})) {
    return OPENNEURON_FALLBACK(glu_backward, grad_output, self, dim);
  }
  const c10::DeviceGuard guard(self.device());
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  return glu_backward_out(grad_output, self, dim, grad_input);
}

std::tuple<at::Tensor, at::Tensor> prelu_kernel_backward(const at::Tensor& grad_output,
                                                         const at::Tensor& self,
                                                         const at::Tensor& weight) {
  if (!nn::all_nn_dtypes({&grad_output, &self, &weight}) ||
      self.scalar_type() != weight.scalar_type()) {
    return OPENNEURON_FALLBACK(_prelu_kernel_backward, grad_output, self, weight);
  }
  OPENNEURON_NATIVE_OP("aten::_prelu_kernel_backward");
  check_same_device("aten::_prelu_kernel_backward", {&grad_output, &self, &weight});
  const c10::DeviceGuard guard(self.device());
  // Both gradients take the broadcast shape, as the CPU's two-output TensorIterator gives
  // them; autograd sums the weight's down to its shape.
  const auto shape =
      at::infer_size(at::infer_size(self.sizes(), weight.sizes()), grad_output.sizes());
  at::Tensor grad_self =
      empty_elementwise_output(shape, {&self, &weight, &grad_output}, self.options());
  at::Tensor grad_weight =
      empty_elementwise_output(shape, {&self, &weight, &grad_output}, weight.options());
  launch("aten::_prelu_kernel_backward", PointwiseOp::PreluInputGrad, grad_self,
         {grad_output, self, weight});
  launch("aten::_prelu_kernel_backward", PointwiseOp::PreluWeightGrad, grad_weight,
         {grad_output, self});
  return {grad_self, grad_weight};
}

}  // namespace openneuron::bridge
