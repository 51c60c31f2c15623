// Pooling on the device: max (with indices), average and adaptive average, 2-D; the 1-D
// variants reach these through PyTorch's own decompositions.
#include <ATen/native/Pool.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/nn/nn_helpers.h"
#include "aten/ops/nn/ops_nn.h"
#include "aten/ops/nn/sliding_windows.h"
#include "kernels/nn/pooling.h"

namespace openneuron::bridge {

namespace {

int64_t pick(at::IntArrayRef values, int index, int64_t otherwise) {
  if (values.empty()) return otherwise;
  return values.size() == 1 ? values[0] : values[index];
}

struct PoolGeometry {
  kernels::Pool2dParams params;
  int64_t out_h = 0, out_w = 0;
};

PoolGeometry pool_geometry(const char* name, const at::Tensor& self, at::IntArrayRef kernel_size,
                           at::IntArrayRef stride, at::IntArrayRef padding,
                           at::IntArrayRef dilation, bool ceil_mode) {
  TORCH_CHECK(kernel_size.size() == 1 || kernel_size.size() == 2, name,
              ": kernel_size must either be a single int, or a tuple of two ints");
  TORCH_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 2, name,
              ": stride must either be omitted, a single int, or a tuple of two ints");
  TORCH_CHECK(padding.size() == 1 || padding.size() == 2, name,
              ": padding must either be a single int, or a tuple of two ints");
  TORCH_CHECK(dilation.empty() || dilation.size() == 1 || dilation.size() == 2, name,
              ": dilation must be either a single int, or a tuple of two ints");
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4, name, ": expected 3D or 4D input, got ",
              self.dim(), "D");
  PoolGeometry g;
  auto& p = g.params;
  for (int i = 0; i < 2; ++i) {
    p.kernel[i] = pick(kernel_size, i, 1);
    p.stride[i] = pick(stride, i, p.kernel[i]);
    p.padding[i] = pick(padding, i, 0);
    p.dilation[i] = pick(dilation, i, 1);
  }
  const int64_t h = self.size(-2), w = self.size(-1);
  g.out_h = at::native::pooling_output_shape<int64_t>(h, p.kernel[0], p.padding[0], p.stride[0],
                                                      p.dilation[0], ceil_mode);
  g.out_w = at::native::pooling_output_shape<int64_t>(w, p.kernel[1], p.padding[1], p.stride[1],
                                                      p.dilation[1], ceil_mode);
  at::native::pool2d_shape_check(self, p.kernel[0], p.kernel[1], p.stride[0], p.stride[1],
                                 p.padding[0], p.padding[1], p.dilation[0], p.dilation[1],
                                 self.size(-3), h, w, g.out_h, g.out_w,
                                 at::MemoryFormat::Contiguous);
  return g;
}

// The sliding window a pooling geometry describes.
Window window_of(const PoolGeometry& g) {
  Window w;
  for (int i = 0; i < 2; ++i) {
    w.kernel[i] = g.params.kernel[i];
    w.stride[i] = g.params.stride[i];
    w.padding[i] = g.params.padding[i];
    w.dilation[i] = g.params.dilation[i];
  }
  return w;
}

std::vector<int64_t> pooled_shape(const at::Tensor& self, int64_t out_h, int64_t out_w) {
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().end());
  shape[shape.size() - 2] = out_h;
  shape[shape.size() - 1] = out_w;
  return shape;
}

kernels::TensorView as_4d(const at::Tensor& t) {
  kernels::TensorView view = view_of(t);
  return t.dim() == 3 ? nn::with_unit_dim(view, 0) : view;
}

// The layout PyTorch's CPU and meta kernels give pooling results: the input's suggested
// memory format for 4-D inputs (channels_last stays channels_last), contiguous for 3-D.
at::MemoryFormat pooled_format(const at::Tensor& self) {
  return self.dim() == 4 ? self.suggest_memory_format() : at::MemoryFormat::Contiguous;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> max_pool2d_with_indices(
    const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  const c10::Device device = nn::check_device("aten::max_pool2d_with_indices", {&self});
  const PoolGeometry g =
      pool_geometry("max_pool2d", self, kernel_size, stride, padding, dilation, ceil_mode);
  if (at::isIntegralType(self.scalar_type(), /*includeBool=*/false) &&
      is_native_compute_dtype(self.scalar_type())) {
    return integer_max_pool2d(self, window_of(g), g.out_h, g.out_w);
  }
  if (!nn::is_nn_dtype(self.scalar_type())) {
    // Allocated at their final shape and layout: the host fallback copies its result into
    // them, keeping their strides (channels_last as the meta kernel gives).
    const auto shape = pooled_shape(self, g.out_h, g.out_w);
    const at::MemoryFormat format = pooled_format(self);
    at::Tensor out = at::empty(shape, self.options().memory_format(format));
    at::Tensor indices = at::empty(shape, self.options().dtype(at::kLong).memory_format(format));
    OPENNEURON_FALLBACK(max_pool2d_with_indices_out, self, kernel_size, stride, padding, dilation,
                        ceil_mode, out, indices);
    return {out, indices};
  }
  OPENNEURON_NATIVE_OP("aten::max_pool2d_with_indices");
  const c10::DeviceGuard guard(device);
  const auto shape = pooled_shape(self, g.out_h, g.out_w);
  const at::MemoryFormat format = pooled_format(self);
  at::Tensor out = at::empty(shape, self.options().memory_format(format));
  // The kernel writes dense indices; a channels_last result gets them copied into its layout.
  at::Tensor indices = at::empty(shape, self.options().dtype(at::kLong));
  if (out.numel() == 0) {
    return {out, format == at::MemoryFormat::Contiguous ? indices : indices.contiguous(format)};
  }
  const kernels::TensorView out_view = as_4d(out), idx_view = as_4d(indices), in_view = as_4d(self);
  const kernels::Pool2dParams params = g.params;
  stream_for(out).enqueue("aten::max_pool2d_with_indices", [=] {
    kernels::max_pool2d_forward(out_view, idx_view, in_view, params);
  });
  if (format != at::MemoryFormat::Contiguous) indices = indices.contiguous(format);
  return {out, indices};
}

std::tuple<at::Tensor&, at::Tensor&> max_pool2d_with_indices_out(
    const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode, at::Tensor& out,
    at::Tensor& indices) {
  const bool integer = at::isIntegralType(self.scalar_type(), /*includeBool=*/false) &&
                       is_native_compute_dtype(self.scalar_type()) &&
                       out.scalar_type() == self.scalar_type();
  if (!nn::all_nn_dtypes({&self, &out}) && !integer) {
    return OPENNEURON_FALLBACK(max_pool2d_with_indices_out, self, kernel_size, stride, padding,
                               dilation, ceil_mode, out, indices);
  }
  OPENNEURON_NATIVE_OP("aten::max_pool2d_with_indices.out");
  nn::check_device("aten::max_pool2d_with_indices.out", {&self, &out, &indices});
  auto result =
      bridge::max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode);
  assign_out(out, std::get<0>(result));
  assign_out(indices, std::get<1>(result));
  return {out, indices};
}

at::Tensor max_pool2d_with_indices_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                            at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                            at::IntArrayRef padding, at::IntArrayRef dilation,
                                            bool ceil_mode, const at::Tensor& indices) {
  const c10::Device device =
      nn::check_device("aten::max_pool2d_with_indices_backward", {&grad_output, &self, &indices});
  if (!nn::all_nn_dtypes({&grad_output, &self})) {
    // In the input's layout: the host fallback copies its result in, keeping these strides.
    at::Tensor grad_input =
        at::empty(self.sizes(), self.options().memory_format(pooled_format(self)));
    return OPENNEURON_FALLBACK(max_pool2d_with_indices_backward_grad_input, grad_output, self,
                               kernel_size, stride, padding, dilation, ceil_mode, indices,
                               grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::max_pool2d_with_indices_backward");
  const c10::DeviceGuard guard(device);
  const PoolGeometry g = pool_geometry("max_pool2d_with_indices_backward", self, kernel_size,
                                       stride, padding, dilation, ceil_mode);
  TORCH_CHECK(grad_output.sizes().equals(pooled_shape(self, g.out_h, g.out_w)),
              "max_pool2d_with_indices_backward: grad_output has shape ", grad_output.sizes());
  at::Tensor grad_input =
      at::empty(self.sizes(), self.options().memory_format(pooled_format(self)));
  if (grad_input.numel() == 0) return grad_input;
  const at::Tensor dense_indices = indices.contiguous();
  const kernels::TensorView gi = as_4d(grad_input), go = as_4d(grad_output),
                            idx = as_4d(dense_indices);
  stream_for(grad_input).enqueue("aten::max_pool2d_with_indices_backward", [=] {
    kernels::max_pool2d_backward(gi, go, idx);
  });
  return grad_input;
}

at::Tensor& max_pool2d_with_indices_backward_out(
    const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef kernel_size,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,
    const at::Tensor& indices, at::Tensor& grad_input) {
  if (!nn::all_nn_dtypes({&grad_output, &self, &grad_input})) {
    return OPENNEURON_FALLBACK(max_pool2d_with_indices_backward_grad_input, grad_output, self,
                               kernel_size, stride, padding, dilation, ceil_mode, indices,
                               grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::max_pool2d_with_indices_backward.grad_input");
  return assign_out(
      grad_input, bridge::max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride,
                                                           padding, dilation, ceil_mode, indices));
}

at::Tensor avg_pool2d(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                      std::optional<int64_t> divisor_override) {
  const c10::Device device = nn::check_device("aten::avg_pool2d", {&self});
  if (self.scalar_type() == at::kLong) {  // the one integer dtype the CPU averages
    TORCH_CHECK(!divisor_override.has_value() || *divisor_override != 0,
                "divisor must be not zero");
    const PoolGeometry g =
        pool_geometry("avg_pool2d", self, kernel_size, stride, padding, {}, ceil_mode);
    return integer_avg_pool2d(self, window_of(g), g.out_h, g.out_w, count_include_pad,
                              divisor_override);
  }
  if (!nn::is_nn_dtype(self.scalar_type())) {
    at::Tensor out = at::empty({0}, self.options());
    return OPENNEURON_FALLBACK(avg_pool2d_out, self, kernel_size, stride, padding, ceil_mode,
                               count_include_pad, divisor_override, out);
  }
  OPENNEURON_NATIVE_OP("aten::avg_pool2d");
  TORCH_CHECK(!divisor_override.has_value() || *divisor_override != 0, "divisor must be not zero");
  const c10::DeviceGuard guard(device);
  PoolGeometry g = pool_geometry("avg_pool2d", self, kernel_size, stride, padding, {}, ceil_mode);
  g.params.count_include_pad = count_include_pad;
  g.params.divisor_override = divisor_override.value_or(0);
  at::Tensor out = at::empty(pooled_shape(self, g.out_h, g.out_w),
                             self.options().memory_format(pooled_format(self)));
  if (out.numel() == 0) return out;
  const kernels::TensorView out_view = as_4d(out), in_view = as_4d(self);
  const kernels::Pool2dParams params = g.params;
  stream_for(out).enqueue("aten::avg_pool2d",
                          [=] { kernels::avg_pool2d_forward(out_view, in_view, params); });
  return out;
}

at::Tensor& avg_pool2d_out(const at::Tensor& self, at::IntArrayRef kernel_size,
                           at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
                           bool count_include_pad, std::optional<int64_t> divisor_override,
                           at::Tensor& out) {
  const bool integer = self.scalar_type() == at::kLong && out.scalar_type() == at::kLong;
  if (!nn::all_nn_dtypes({&self, &out}) && !integer) {
    return OPENNEURON_FALLBACK(avg_pool2d_out, self, kernel_size, stride, padding, ceil_mode,
                               count_include_pad, divisor_override, out);
  }
  OPENNEURON_NATIVE_OP("aten::avg_pool2d.out");
  nn::check_device("aten::avg_pool2d.out", {&self, &out});
  return assign_out(out, bridge::avg_pool2d(self, kernel_size, stride, padding, ceil_mode,
                                            count_include_pad, divisor_override));
}

at::Tensor avg_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                               at::IntArrayRef kernel_size, at::IntArrayRef stride,
                               at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor_override) {
  const c10::Device device = nn::check_device("aten::avg_pool2d_backward", {&grad_output, &self});
  if (!nn::all_nn_dtypes({&grad_output, &self})) {
    at::Tensor grad_input =
        at::empty(self.sizes(), self.options().memory_format(pooled_format(self)));
    return OPENNEURON_FALLBACK(avg_pool2d_backward_grad_input, grad_output, self, kernel_size,
                               stride, padding, ceil_mode, count_include_pad, divisor_override,
                               grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::avg_pool2d_backward");
  const c10::DeviceGuard guard(device);
  PoolGeometry g =
      pool_geometry("avg_pool2d_backward", self, kernel_size, stride, padding, {}, ceil_mode);
  g.params.count_include_pad = count_include_pad;
  g.params.divisor_override = divisor_override.value_or(0);
  TORCH_CHECK(grad_output.sizes().equals(pooled_shape(self, g.out_h, g.out_w)),
              "avg_pool2d_backward: grad_output has shape ", grad_output.sizes());
  at::Tensor grad_input =
      at::empty(self.sizes(), self.options().memory_format(pooled_format(self)));
  if (grad_input.numel() == 0) return grad_input;
  const kernels::TensorView gi = as_4d(grad_input), go = as_4d(grad_output);
  const kernels::Pool2dParams params = g.params;
  stream_for(grad_input).enqueue("aten::avg_pool2d_backward", [=] {
    kernels::avg_pool2d_backward(gi, go, params);
  });
  return grad_input;
}

at::Tensor& avg_pool2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                    at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                                    std::optional<int64_t> divisor_override,
                                    at::Tensor& grad_input) {
  if (!nn::all_nn_dtypes({&grad_output, &self, &grad_input})) {
    return OPENNEURON_FALLBACK(avg_pool2d_backward_grad_input, grad_output, self, kernel_size,
                               stride, padding, ceil_mode, count_include_pad, divisor_override,
                               grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::avg_pool2d_backward.grad_input");
  return assign_out(grad_input,
                    bridge::avg_pool2d_backward(grad_output, self, kernel_size, stride, padding,
                                                ceil_mode, count_include_pad, divisor_override));
}

at::Tensor adaptive_avg_pool2d(const at::Tensor& self, at::IntArrayRef output_size) {
  const c10::Device device = nn::check_device("aten::_adaptive_avg_pool2d", {&self});
  if (!nn::is_nn_dtype(self.scalar_type())) {
    return OPENNEURON_FALLBACK(_adaptive_avg_pool2d, self, output_size);
  }
  OPENNEURON_NATIVE_OP("aten::_adaptive_avg_pool2d");
  TORCH_CHECK(output_size.size() == 2, "adaptive_avg_pool2d: output_size must be 2");
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4,
              "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got ", self.sizes());
  for (int64_t d = 1; d < self.dim(); ++d) {
    TORCH_CHECK(self.size(d) > 0,
                "adaptive_avg_pool2d(): Expected input to have non-zero size "
                "for non-batch dimensions, but input has sizes ",
                self.sizes());
  }
  const c10::DeviceGuard guard(device);
  at::Tensor out = at::empty(pooled_shape(self, output_size[0], output_size[1]),
                             self.options().memory_format(pooled_format(self)));
  if (out.numel() == 0) return out;
  const kernels::TensorView out_view = as_4d(out), in_view = as_4d(self);
  stream_for(out).enqueue("aten::_adaptive_avg_pool2d",
                          [=] { kernels::adaptive_avg_pool2d_forward(out_view, in_view); });
  return out;
}

at::Tensor& adaptive_avg_pool2d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                    at::Tensor& out) {
  if (!nn::all_nn_dtypes({&self, &out})) {
    return OPENNEURON_FALLBACK(_adaptive_avg_pool2d_out, self, output_size, out);
  }
  OPENNEURON_NATIVE_OP("aten::_adaptive_avg_pool2d.out");
  nn::check_device("aten::_adaptive_avg_pool2d.out", {&self, &out});
  return assign_out(out, bridge::adaptive_avg_pool2d(self, output_size));
}

at::Tensor adaptive_avg_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self) {
  const c10::Device device =
      nn::check_device("aten::_adaptive_avg_pool2d_backward", {&grad_output, &self});
  if (!nn::all_nn_dtypes({&grad_output, &self})) {
    return OPENNEURON_FALLBACK(_adaptive_avg_pool2d_backward, grad_output, self);
  }
  OPENNEURON_NATIVE_OP("aten::_adaptive_avg_pool2d_backward");
  // As PyTorch's CPU kernel: an empty output size (output_size=0) has no gradient to pool.
  TORCH_CHECK(grad_output.dim() == 3 || grad_output.dim() == 4,
              "adaptive_avg_pool2d_backward(): Expected 3D or 4D grad_output, but got ",
              grad_output.sizes());
  for (int64_t d = 1; d < grad_output.dim(); ++d) {
    TORCH_CHECK(grad_output.size(d) > 0,
                "adaptive_avg_pool2d_backward(): Expected grad_output to have non-zero size "
                "for non-batch dimensions, but grad_output has sizes ",
                grad_output.sizes(), " with dimension ", d, " being empty");
  }
  TORCH_CHECK(grad_output.dim() == self.dim(),
              "adaptive_avg_pool2d_backward(): grad_output and input must have the same rank");
  const c10::DeviceGuard guard(device);
  at::Tensor grad_input =
      at::empty(self.sizes(), self.options().memory_format(pooled_format(self)));
  if (grad_input.numel() == 0) return grad_input;
  const kernels::TensorView gi = as_4d(grad_input), go = as_4d(grad_output);
  stream_for(grad_input).enqueue("aten::_adaptive_avg_pool2d_backward", [=] {
    kernels::adaptive_avg_pool2d_backward(gi, go);
  });
  return grad_input;
}

at::Tensor& adaptive_avg_pool2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                             at::Tensor& out) {
  if (!nn::all_nn_dtypes({&grad_output, &self, &out})) {
    return OPENNEURON_FALLBACK(_adaptive_avg_pool2d_backward_out, grad_output, self, out);
  }
  OPENNEURON_NATIVE_OP("aten::_adaptive_avg_pool2d_backward.out");
  return assign_out(out, bridge::adaptive_avg_pool2d_backward(grad_output, self));
}

}  // namespace openneuron::bridge
