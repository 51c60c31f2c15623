// Convolution on the device: at::_convolution picks the "overrideable" backend for
// PrivateUse1 tensors, so conv1d/2d/3d and conv_transpose1d/2d/3d arrive here (at::_convolution
// has checked the shapes). int64 1-D/2-D convolutions take ops_conv_integer.cpp; float64, the
// other integer cases and 3-D int64 run on the host (counted as fallbacks).
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/ops/nn/nn_helpers.h"
#include "aten/ops/nn/ops_nn.h"
#include "kernels/matmul/conv.h"
#include "kernels/matmul/conv3d.h"
#include "kernels/matmul/conv_transpose.h"

namespace openneuron::bridge {

namespace {

bool conv_is_native(const at::Tensor& input, const at::Tensor& weight, const at::Tensor* bias,
                    bool transposed, at::IntArrayRef stride, at::IntArrayRef output_padding) {
  if (transposed && (output_padding.size() != stride.size())) return false;
  return (input.dim() >= 3 && input.dim() <= 5) && input.dim() == weight.dim() &&
         nn::all_nn_dtypes({&input, &weight, bias}) &&
         (bias == nullptr || bias->scalar_type() == input.scalar_type()) &&
         input.scalar_type() == weight.scalar_type();
}

kernels::Conv2dParams conv_params(int64_t spatial_dims, at::IntArrayRef stride,
                                  at::IntArrayRef padding, at::IntArrayRef dilation,
                                  int64_t groups) {
  kernels::Conv2dParams p;
  // A 1-D convolution is a 2-D one over a height of 1 (stride/padding/dilation 1/0/1).
  const int first = spatial_dims == 1 ? 1 : 0;
  for (int d = 0; d < spatial_dims; ++d) {
    p.stride[first + d] = stride[d];
    p.padding[first + d] = padding[d];
    p.dilation[first + d] = dilation[d];
  }
  p.groups = groups;
  return p;
}

// A transposed convolution is a convolution's input gradient only while its output padding stays
// below the stride. Past that (PyTorch allows it up to the dilation), the input is extended by
// output_padding / stride zero rows per dim: they add nothing, and the remaining output padding
// is below the stride. Returns the input itself when no dim needs it.
at::Tensor extended_for_output_padding(const at::Tensor& input, bool transposed,
                                       at::IntArrayRef stride, at::IntArrayRef output_padding) {
  if (!transposed) return input;
  std::vector<int64_t> shape = input.sizes().vec();
  bool extend = false;
  for (size_t d = 0; d < output_padding.size(); ++d) {
    const int64_t extra = output_padding[d] / stride[d];
    shape[d + 2] += extra;
    extend = extend || extra > 0;
  }
  if (!extend) return input;
  at::Tensor extended = at::zeros(shape, input.options());
  at::Tensor inner = extended;
  for (int64_t d = 2; d < input.dim(); ++d) inner = inner.narrow(d, 0, input.size(d));
  inner.copy_(input);
  return extended;
}

kernels::Conv3dParams conv3d_params(at::IntArrayRef stride, at::IntArrayRef padding,
                                    at::IntArrayRef dilation, int64_t groups) {
  kernels::Conv3dParams p;
  for (int d = 0; d < 3; ++d) {
    p.stride[d] = stride[d];
    p.padding[d] = padding[d];
    p.dilation[d] = dilation[d];
  }
  p.groups = groups;
  return p;
}

kernels::TensorView as_4d(const at::Tensor& t) {
  kernels::TensorView view = view_of(t);
  return t.dim() == 3 ? nn::with_unit_dim(view, 2) : view;
}

// The host path for what the kernels do not cover (counted and computed on CPU copies).
at::Tensor host_convolution(const at::Tensor& input, const at::Tensor& weight,
                            const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                            at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                            at::IntArrayRef output_padding, int64_t groups) {
  record_fallback("aten::convolution_overrideable");
  std::optional<at::Tensor> host_bias;
  if (bias.has_value() && bias->defined()) host_bias = bias->cpu();
  return at::convolution(input.cpu(), weight.cpu(), host_bias, stride, padding, dilation,
                         transposed, output_padding, groups)
      .to(input.device());
}

}  // namespace

at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                                    at::IntArrayRef padding, at::IntArrayRef dilation,
                                    bool transposed, at::IntArrayRef output_padding,
                                    int64_t groups) {
  const at::Tensor* bias_ptr = nn::opt(bias);
  const c10::Device device =
      nn::check_device("aten::convolution_overrideable", {&input, &weight, bias_ptr});
  if (integer_convolution_supported(input, weight, bias_ptr, groups)) {
    return integer_convolution(input, weight, bias_ptr, transposed, stride, padding, dilation,
                               output_padding, groups);
  }
  if (!conv_is_native(input, weight, bias_ptr, transposed, stride, output_padding)) {
    return host_convolution(input, weight, bias, stride, padding, dilation, transposed,
                            output_padding, groups);
  }
  OPENNEURON_NATIVE_OP("aten::convolution_overrideable");
  const c10::DeviceGuard guard(device);
  const int64_t spatial = input.dim() - 2;
  std::vector<int64_t> out_shape = {input.size(0),
                                    transposed ? weight.size(1) * groups : weight.size(0)};
  for (int64_t d = 0; d < spatial; ++d) {
    const int64_t extent = dilation[d] * (weight.size(d + 2) - 1) + 1;
    const int64_t size = transposed ? (input.size(d + 2) - 1) * stride[d] - 2 * padding[d] +
                                          extent + output_padding[d]
                                    : (input.size(d + 2) + 2 * padding[d] - extent) / stride[d] + 1;
    TORCH_CHECK(size > 0, "Calculated output size is too small (input ", input.sizes(), ", kernel ",
                weight.sizes(), ")");
    out_shape.push_back(size);
  }
  at::Tensor out = at::empty(out_shape, input.options());
  if (out.numel() == 0) return out;
  const at::Tensor source = extended_for_output_padding(input, transposed, stride, output_padding);
  if (spatial == 3) {
    const kernels::Conv3dParams params = conv3d_params(stride, padding, dilation, groups);
    const kernels::TensorView out_view = view_of(out);
    const kernels::TensorView in_view = view_of(source);
    const kernels::TensorView w_view = view_of(weight);
    const bool has_bias = bias_ptr != nullptr;
    const kernels::TensorView b_view = has_bias ? view_of(*bias_ptr) : kernels::TensorView{};
    stream_for(out).enqueue("aten::convolution_overrideable", [=] {
      const auto forward = transposed ? kernels::conv_transpose3d_forward : kernels::conv3d_forward;
      forward(out_view, in_view, w_view, has_bias ? &b_view : nullptr, params);
    });
    return out;
  }
  const kernels::Conv2dParams params = conv_params(spatial, stride, padding, dilation, groups);
  const kernels::TensorView out_view = as_4d(out);
  const kernels::TensorView in_view = as_4d(source);
  const kernels::TensorView w_view = as_4d(weight);
  const bool has_bias = bias_ptr != nullptr;
  const kernels::TensorView b_view = has_bias ? view_of(*bias_ptr) : kernels::TensorView{};
  stream_for(out).enqueue("aten::convolution_overrideable", [=] {
    if (transposed) {
      kernels::conv_transpose2d_forward(out_view, in_view, w_view, has_bias ? &b_view : nullptr,
                                        params);
    } else {
      kernels::conv2d_forward(out_view, in_view, w_view, has_bias ? &b_view : nullptr, params);
    }
  });
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
    at::IntArrayRef output_padding, int64_t groups, std::array<bool, 3> output_mask) {
  const c10::Device device =
      nn::check_device("aten::convolution_backward_overrideable", {&grad_output, &input, &weight});
  const int64_t bias_size = transposed ? weight.size(1) * groups : weight.size(0);
  if (!conv_is_native(input, weight, nullptr, transposed, stride, output_padding) ||
      grad_output.scalar_type() != input.scalar_type()) {
    record_fallback("aten::convolution_backward_overrideable");
    auto result = at::convolution_backward(
        grad_output.cpu(), input.cpu(), weight.cpu(), std::vector<int64_t>{bias_size}, stride,
        padding, dilation, transposed, output_padding, groups, output_mask);
    const auto back = [&](const at::Tensor& t) { return t.defined() ? t.to(device) : t; };
    return {back(std::get<0>(result)), back(std::get<1>(result)), back(std::get<2>(result))};
  }
  OPENNEURON_NATIVE_OP("aten::convolution_backward_overrideable");
  const c10::DeviceGuard guard(device);
  at::Tensor grad_input, grad_weight, grad_bias;
  const at::Tensor source = extended_for_output_padding(input, transposed, stride, output_padding);
  // The input gradient is computed at the extended shape, then cut back to the input's.
  if (output_mask[0]) grad_input = at::empty(source.sizes(), input.options());
  const auto cut_back = [&](const at::Tensor& grad) {
    if (!grad.defined() || source.is_same(input)) return grad;
    at::Tensor inner = grad;
    for (int64_t d = 2; d < input.dim(); ++d) inner = inner.narrow(d, 0, input.size(d));
    return inner.contiguous();
  };
  if (output_mask[1]) grad_weight = at::empty(weight.sizes(), weight.options());
  if (output_mask[2]) grad_bias = at::empty({bias_size}, weight.options());
  if (input.dim() == 5) {
    const kernels::Conv3dParams params = conv3d_params(stride, padding, dilation, groups);
    const kernels::TensorView go_view = view_of(grad_output);
    const kernels::TensorView in_view = view_of(source);
    const kernels::TensorView w_view = view_of(weight);
    const kernels::TensorView gi_view =
        output_mask[0] ? view_of(grad_input) : kernels::TensorView{};
    const kernels::TensorView gw_view =
        output_mask[1] ? view_of(grad_weight) : kernels::TensorView{};
    const kernels::TensorView gb_view = output_mask[2] ? view_of(grad_bias) : kernels::TensorView{};
    stream_for(input).enqueue("aten::convolution_backward_overrideable", [=] {
      const auto backward =
          transposed ? kernels::conv_transpose3d_backward : kernels::conv3d_backward;
      backward(output_mask[0] ? &gi_view : nullptr, output_mask[1] ? &gw_view : nullptr,
               output_mask[2] ? &gb_view : nullptr, go_view, in_view, w_view, params);
    });
    return {cut_back(grad_input), grad_weight, grad_bias};
  }
  const kernels::Conv2dParams params =
      conv_params(input.dim() - 2, stride, padding, dilation, groups);
  const kernels::TensorView go_view = as_4d(grad_output);
  const kernels::TensorView in_view = as_4d(source);
  const kernels::TensorView w_view = as_4d(weight);
  const kernels::TensorView gi_view = output_mask[0] ? as_4d(grad_input) : kernels::TensorView{};
  const kernels::TensorView gw_view = output_mask[1] ? as_4d(grad_weight) : kernels::TensorView{};
  const kernels::TensorView gb_view = output_mask[2] ? view_of(grad_bias) : kernels::TensorView{};
  stream_for(input).enqueue("aten::convolution_backward_overrideable", [=] {
    const auto backward =
        transposed ? kernels::conv_transpose2d_backward : kernels::conv2d_backward;
    backward(output_mask[0] ? &gi_view : nullptr, output_mask[1] ? &gw_view : nullptr,
             output_mask[2] ? &gb_view : nullptr, go_view, in_view, w_view, params);
  });
  return {cut_back(grad_input), grad_weight, grad_bias};
}

}  // namespace openneuron::bridge
