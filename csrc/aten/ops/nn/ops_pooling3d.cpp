// 3-D pooling on the device at fp32/bf16/fp16: max with indices, average and adaptive average,
// forward and backward, for [N, C, D, H, W] and unbatched [C, D, H, W] inputs. Other dtypes go
// to the host. Shapes are checked at the call with PyTorch's own checks (ATen/native/Pool.h).
#include "aten/ops/nn/ops_pooling3d.h"

#include <ATen/native/Pool.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_adaptive_avg_pool3d.h>
#include <ATen/ops/_adaptive_avg_pool3d_backward.h>
#include <ATen/ops/adaptive_avg_pool3d.h>
#include <ATen/ops/avg_pool3d.h>
#include <ATen/ops/avg_pool3d_backward.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/max_pool3d_with_indices.h>
#include <ATen/ops/max_pool3d_with_indices_backward.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/nn/nn_helpers.h"
#include "kernels/nn/pool3d.h"

namespace openneuron::bridge {

namespace {

bool is_pool_dtype(std::initializer_list<const at::Tensor*> tensors) {
  for (const at::Tensor* t : tensors) {
    const at::ScalarType type = t->scalar_type();
    if (type != at::kFloat && type != at::kBFloat16 && type != at::kHalf) return false;
  }
  return true;
}

int64_t pick(at::IntArrayRef values, int index, int64_t otherwise) {
  if (values.empty()) return otherwise;
  return values.size() == 1 ? values[0] : values[index];
}

struct Pool3dGeometry {
  kernels::Pool3dParams params;
  int64_t out[3] = {0, 0, 0};
};

Pool3dGeometry geometry(const char* name, const at::Tensor& self, at::IntArrayRef kernel_size,
                        at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                        bool ceil_mode, bool average) {
  TORCH_CHECK(kernel_size.size() == 1 || kernel_size.size() == 3, name,
              ": kernel_size must either be a single int, or a tuple of three ints");
  TORCH_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 3, name,
              ": stride must either be omitted, a single int, or a tuple of three ints");
  TORCH_CHECK(padding.size() == 1 || padding.size() == 3, name,
              ": padding must either be a single int, or a tuple of three ints");
  TORCH_CHECK(dilation.empty() || dilation.size() == 1 || dilation.size() == 3, name,
              ": dilation must be either a single int, or a tuple of three ints");
  TORCH_CHECK(self.dim() == 4 || self.dim() == 5,
              "non-empty 4D or 5D (batch mode) tensor "
              "expected for input");
  Pool3dGeometry g;
  auto& p = g.params;
  for (int i = 0; i < 3; ++i) {
    p.kernel[i] = pick(kernel_size, i, 1);
    p.stride[i] = pick(stride, i, p.kernel[i]);
    p.padding[i] = pick(padding, i, 0);
    p.dilation[i] = pick(dilation, i, 1);
    g.out[i] = at::native::pooling_output_shape<int64_t>(
        self.size(-3 + i), p.kernel[i], p.padding[i], p.stride[i], p.dilation[i], ceil_mode);
  }
  at::native::pool3d_shape_check(self, self.size(-4), p.kernel[0], p.kernel[1], p.kernel[2],
                                 p.stride[0], p.stride[1], p.stride[2], p.padding[0], p.padding[1],
                                 p.padding[2], p.dilation[0], p.dilation[1], p.dilation[2],
                                 self.size(-3), self.size(-2), self.size(-1), g.out[0], g.out[1],
                                 g.out[2], name, /*check_input_size=*/average);
  return g;
}

std::vector<int64_t> pooled_shape(const at::Tensor& self, const int64_t out[3]) {
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().end());
  for (int i = 0; i < 3; ++i) shape[shape.size() - 3 + i] = out[i];
  return shape;
}

kernels::TensorView as_5d(const at::Tensor& t) {
  kernels::TensorView view = view_of(t);
  return t.dim() == 4 ? nn::with_unit_dim(view, 0) : view;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> max_pool3d_with_indices(
    const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  if (!is_pool_dtype({&self})) {
    return OPENNEURON_FALLBACK(max_pool3d_with_indices, self, kernel_size, stride, padding,
                               dilation, ceil_mode);
  }
  OPENNEURON_NATIVE_OP("aten::max_pool3d_with_indices");
  const c10::Device device = nn::check_device("aten::max_pool3d_with_indices", {&self});
  const Pool3dGeometry g = geometry("max_pool3d_with_indices()", self, kernel_size, stride, padding,
                                    dilation, ceil_mode, false);
  const c10::DeviceGuard guard(device);
  const auto shape = pooled_shape(self, g.out);
  at::Tensor out = at::empty(shape, self.options());
  at::Tensor indices = at::empty(shape, self.options().dtype(at::kLong));
  if (out.numel() == 0) return {out, indices};
  const kernels::TensorView o = as_5d(out), idx = as_5d(indices), in = as_5d(self);
  const kernels::Pool3dParams params = g.params;
  stream_for(out).enqueue("aten::max_pool3d_with_indices",
                          [=] { kernels::max_pool3d_forward(o, idx, in, params); });
  return {out, indices};
}

std::tuple<at::Tensor&, at::Tensor&> max_pool3d_with_indices_out(
    const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode, at::Tensor& out,
    at::Tensor& indices) {
  if (!is_pool_dtype({&self, &out}) || indices.scalar_type() != at::kLong) {
    return OPENNEURON_FALLBACK(max_pool3d_with_indices_out, self, kernel_size, stride, padding,
                               dilation, ceil_mode, out, indices);
  }
  auto result =
      bridge::max_pool3d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode);
  assign_out(out, std::get<0>(result));
  assign_out(indices, std::get<1>(result));
  return {out, indices};
}

at::Tensor max_pool3d_with_indices_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                            at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                            at::IntArrayRef padding, at::IntArrayRef dilation,
                                            bool ceil_mode, const at::Tensor& indices) {
  if (!is_pool_dtype({&grad_output, &self}) || grad_output.scalar_type() != self.scalar_type()) {
    return OPENNEURON_FALLBACK(max_pool3d_with_indices_backward, grad_output, self, kernel_size,
                               stride, padding, dilation, ceil_mode, indices);
  }
  OPENNEURON_NATIVE_OP("aten::max_pool3d_with_indices_backward");
  const c10::Device device =
      nn::check_device("aten::max_pool3d_with_indices_backward", {&grad_output, &self, &indices});
  const Pool3dGeometry g = geometry("max_pool3d_with_indices_backward()", self, kernel_size, stride,
                                    padding, dilation, ceil_mode, false);
  TORCH_CHECK(grad_output.sizes() == indices.sizes() &&
                  grad_output.sizes() == c10::IntArrayRef(pooled_shape(self, g.out)),
              "max_pool3d_with_indices_backward(): grad_output and indices must have the "
              "pooled shape");
  const c10::DeviceGuard guard(device);
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  if (grad_input.numel() == 0) return grad_input;
  const at::Tensor dense_indices = indices.contiguous();
  const kernels::TensorView gi = as_5d(grad_input), go = as_5d(grad_output),
                            idx = as_5d(dense_indices);
  stream_for(grad_input).enqueue("aten::max_pool3d_with_indices_backward", [=] {
    kernels::max_pool3d_backward(gi, go, idx);
  });
  return grad_input;
}

at::Tensor& max_pool3d_with_indices_backward_out(
    const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef kernel_size,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,
    const at::Tensor& indices, at::Tensor& grad_input) {
  if (!is_pool_dtype({&grad_output, &self, &grad_input})) {
    return OPENNEURON_FALLBACK(max_pool3d_with_indices_backward_grad_input, grad_output, self,
                               kernel_size, stride, padding, dilation, ceil_mode, indices,
                               grad_input);
  }
  return assign_out(
      grad_input, bridge::max_pool3d_with_indices_backward(grad_output, self, kernel_size, stride,
                                                           padding, dilation, ceil_mode, indices));
}

at::Tensor avg_pool3d(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                      std::optional<int64_t> divisor_override) {
  if (!is_pool_dtype({&self})) {
    return OPENNEURON_FALLBACK(avg_pool3d, self, kernel_size, stride, padding, ceil_mode,
                               count_include_pad, divisor_override);
  }
  OPENNEURON_NATIVE_OP("aten::avg_pool3d");
  const c10::Device device = nn::check_device("aten::avg_pool3d", {&self});
  TORCH_CHECK(!divisor_override.has_value() || divisor_override.value() != 0,
              "divisor must be not zero");
  Pool3dGeometry g =
      geometry("avg_pool3d()", self, kernel_size, stride, padding, {}, ceil_mode, true);
  g.params.count_include_pad = count_include_pad;
  g.params.divisor_override = divisor_override.value_or(0);
  const c10::DeviceGuard guard(device);
  at::Tensor out = at::empty(pooled_shape(self, g.out), self.options());
  if (out.numel() == 0) return out;
  const kernels::TensorView o = as_5d(out), in = as_5d(self);
  const kernels::Pool3dParams params = g.params;
  stream_for(out).enqueue("aten::avg_pool3d", [=] { kernels::avg_pool3d_forward(o, in, params); });
  return out;
}

at::Tensor& avg_pool3d_out(const at::Tensor& self, at::IntArrayRef kernel_size,
                           at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
                           bool count_include_pad, std::optional<int64_t> divisor_override,
                           at::Tensor& out) {
  if (!is_pool_dtype({&self, &out})) {
    return OPENNEURON_FALLBACK(avg_pool3d_out, self, kernel_size, stride, padding, ceil_mode,
                               count_include_pad, divisor_override, out);
  }
  return assign_out(out, bridge::avg_pool3d(self, kernel_size, stride, padding, ceil_mode,
                                            count_include_pad, divisor_override));
}

at::Tensor avg_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                               at::IntArrayRef kernel_size, at::IntArrayRef stride,
                               at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor_override) {
  if (!is_pool_dtype({&grad_output, &self}) || grad_output.scalar_type() != self.scalar_type()) {
    return OPENNEURON_FALLBACK(avg_pool3d_backward, grad_output, self, kernel_size, stride, padding,
                               ceil_mode, count_include_pad, divisor_override);
  }
  OPENNEURON_NATIVE_OP("aten::avg_pool3d_backward");
  const c10::Device device = nn::check_device("aten::avg_pool3d_backward", {&grad_output, &self});
  TORCH_CHECK(!divisor_override.has_value() || divisor_override.value() != 0,
              "divisor must be not zero");
  Pool3dGeometry g =
      geometry("avg_pool3d_backward()", self, kernel_size, stride, padding, {}, ceil_mode, true);
  TORCH_CHECK(grad_output.sizes() == c10::IntArrayRef(pooled_shape(self, g.out)),
              "avg_pool3d_backward(): grad_output must have the pooled shape");
  g.params.count_include_pad = count_include_pad;
  g.params.divisor_override = divisor_override.value_or(0);
  const c10::DeviceGuard guard(device);
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  if (grad_input.numel() == 0) return grad_input;
  const kernels::TensorView gi = as_5d(grad_input), go = as_5d(grad_output);
  const kernels::Pool3dParams params = g.params;
  stream_for(grad_input).enqueue("aten::avg_pool3d_backward", [=] {
    kernels::avg_pool3d_backward(gi, go, params);
  });
  return grad_input;
}

at::Tensor& avg_pool3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                    at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                                    std::optional<int64_t> divisor_override,
                                    at::Tensor& grad_input) {
  if (!is_pool_dtype({&grad_output, &self, &grad_input})) {
    return OPENNEURON_FALLBACK(avg_pool3d_backward_grad_input, grad_output, self, kernel_size,
                               stride, padding, ceil_mode, count_include_pad, divisor_override,
                               grad_input);
  }
  return assign_out(grad_input,
                    bridge::avg_pool3d_backward(grad_output, self, kernel_size, stride, padding,
                                                ceil_mode, count_include_pad, divisor_override));
}

at::Tensor adaptive_avg_pool3d(const at::Tensor& self, at::IntArrayRef output_size) {
  if (!is_pool_dtype({&self})) {
    return OPENNEURON_FALLBACK(_adaptive_avg_pool3d, self, output_size);
  }
  OPENNEURON_NATIVE_OP("aten::_adaptive_avg_pool3d");
  const c10::Device device = nn::check_device("aten::_adaptive_avg_pool3d", {&self});
  TORCH_CHECK(output_size.size() == 3, "adaptive_avg_pool3d: output_size must be 3");
  TORCH_CHECK(self.dim() == 4 || self.dim() == 5,
              "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got ", self.sizes());
  for (int64_t i = 1; i < self.dim(); ++i) {
    TORCH_CHECK(self.size(i) > 0,
                "adaptive_avg_pool3d(): Expected input to have non-zero size "
                "for non-batch dimensions, but input has sizes ",
                self.sizes(), " with dimension ", i, " being empty");
  }
  int64_t out[3];
  for (int i = 0; i < 3; ++i) {
    out[i] = output_size[i];
    TORCH_CHECK(out[i] >= 0,
                "adaptive_avg_pool3d: elements of output_size must be "
                "greater than or equal to 0 but received ",
                out[i]);
  }
  const c10::DeviceGuard guard(device);
  at::Tensor result = at::empty(pooled_shape(self, out), self.options());
  if (result.numel() == 0) return result;
  const kernels::TensorView o = as_5d(result), in = as_5d(self);
  stream_for(result).enqueue("aten::_adaptive_avg_pool3d",
                             [=] { kernels::adaptive_avg_pool3d_forward(o, in); });
  return result;
}

at::Tensor& adaptive_avg_pool3d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                    at::Tensor& out) {
  if (!is_pool_dtype({&self, &out})) {
    return OPENNEURON_FALLBACK(adaptive_avg_pool3d_out, self, output_size, out);
  }
  return assign_out(out, bridge::adaptive_avg_pool3d(self, output_size));
}

at::Tensor adaptive_avg_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self) {
  if (!is_pool_dtype({&grad_output, &self}) || grad_output.scalar_type() != self.scalar_type()) {
    return OPENNEURON_FALLBACK(_adaptive_avg_pool3d_backward, grad_output, self);
  }
  OPENNEURON_NATIVE_OP("aten::_adaptive_avg_pool3d_backward");
  const c10::Device device =
      nn::check_device("aten::_adaptive_avg_pool3d_backward", {&grad_output, &self});
  TORCH_CHECK(grad_output.dim() == self.dim(),
              "adaptive_avg_pool3d_backward(): grad_output and input ranks differ");
  const c10::DeviceGuard guard(device);
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  if (grad_input.numel() == 0) return grad_input;
  const kernels::TensorView gi = as_5d(grad_input), go = as_5d(grad_output);
  stream_for(grad_input).enqueue("aten::_adaptive_avg_pool3d_backward", [=] {
    kernels::adaptive_avg_pool3d_backward(gi, go);
  });
  return grad_input;
}

}  // namespace openneuron::bridge
