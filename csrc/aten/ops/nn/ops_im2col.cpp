// nn.functional.unfold (im2col) and fold (col2im) on the device, through the sliding-window
// gather and scatter-add (sliding_windows.h). Arguments the CPU refuses go to the host, which
// raises its errors.
#include <ATen/core/Tensor.h>
#include <ATen/ops/col2im_ops.h>
#include <ATen/ops/im2col_ops.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/core/op_tracking.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/nn/sliding_windows.h"

namespace openneuron::bridge {
namespace {

// The CPU computes im2col for floats and bool, col2im for floats only.
bool is_float(const at::Tensor& t) {
  const at::ScalarType dtype = t.scalar_type();
  return dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16;
}

// The window, when every parameter has two entries in the CPU's accepted ranges.
bool read_window(at::IntArrayRef kernel, at::IntArrayRef dilation, at::IntArrayRef padding,
                 at::IntArrayRef stride, Window* w) {
  if (kernel.size() != 2 || dilation.size() != 2 || padding.size() != 2 || stride.size() != 2) {
    return false;
  }
  for (int i = 0; i < 2; ++i) {
    w->kernel[i] = kernel[i];
    w->dilation[i] = dilation[i];
    w->padding[i] = padding[i];
    w->stride[i] = stride[i];
    if (kernel[i] <= 0 || dilation[i] <= 0 || padding[i] < 0 || stride[i] <= 0) return false;
  }
  return true;
}

at::Tensor im2col(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef dilation,
                  at::IntArrayRef padding, at::IntArrayRef stride) {
  Window w;
  const bool batched = self.dim() == 4;
  bool native = (is_float(self) || self.scalar_type() == at::kBool) && self.is_privateuseone() &&
                (self.dim() == 3 || batched) &&
                read_window(kernel_size, dilation, padding, stride, &w);
  for (int64_t d = batched ? 1 : 0; native && d < self.dim(); ++d) native = self.size(d) > 0;
  const int64_t out_h = native ? window_positions(self.size(-2), w, 0) : 0;
  const int64_t out_w = native ? window_positions(self.size(-1), w, 1) : 0;
  if (!native || out_h < 1 || out_w < 1) {
    return OPENNEURON_FALLBACK(im2col, self, kernel_size, dilation, padding, stride);
  }
  OPENNEURON_NATIVE_OP("aten::im2col");
  const c10::DeviceGuard guard(self.device());
  const at::Tensor result = gather_windows(batched ? self : self.unsqueeze(0), w);
  return batched ? result : result.squeeze(0);
}

at::Tensor col2im(const at::Tensor& self, at::IntArrayRef output_size, at::IntArrayRef kernel_size,
                  at::IntArrayRef dilation, at::IntArrayRef padding, at::IntArrayRef stride) {
  Window w;
  const bool batched = self.dim() == 3;
  bool native = is_float(self) && self.is_privateuseone() && (self.dim() == 2 || batched) &&
                output_size.size() == 2 && read_window(kernel_size, dilation, padding, stride, &w);
  int64_t height = 0, width = 0, out_h = 0, out_w = 0, taps = 1;
  if (native) {
    height = output_size[0];
    width = output_size[1];
    out_h = window_positions(height, w, 0);
    out_w = window_positions(width, w, 1);
    taps = w.kernel[0] * w.kernel[1];
    native = height > 0 && width > 0 && out_h >= 1 && out_w >= 1 && self.size(-2) > 0 &&
             self.size(-2) % taps == 0 && self.size(-1) == out_h * out_w;
  }
  if (!native) {
    return OPENNEURON_FALLBACK(col2im, self, output_size, kernel_size, dilation, padding, stride);
  }
  OPENNEURON_NATIVE_OP("aten::col2im");
  const c10::DeviceGuard guard(self.device());
  const at::Tensor result = scatter_windows(batched ? self : self.unsqueeze(0), height, width, w);
  return batched ? result : result.squeeze(0);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("im2col", TORCH_FN(im2col));
  m.impl("col2im", TORCH_FN(col2im));
}

}  // namespace openneuron::bridge
