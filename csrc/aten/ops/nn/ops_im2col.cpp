// nn.functional.unfold (im2col) and fold (col2im) on the device, as strided copies and adds:
// one per kernel position, each moving the (stride-spaced, dilation-offset) window of every
// output position. Adds come in kernel order, the order the CPU's col2im sums overlaps in.
// Arguments the CPU refuses go to the host, which raises its errors.
#include <ATen/core/Tensor.h>

#include <ATen/ops/col2im_ops.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/im2col_ops.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/core/op_tracking.h"
#include "aten/fallback/fallback.h"

namespace openneuron::bridge {
namespace {

// The CPU computes im2col for floats and bool, col2im for floats only.
bool is_float(const at::Tensor& t) {
  const at::ScalarType dtype = t.scalar_type();
  return dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16;
}

struct Window {
  int64_t kernel[2], dilation[2], padding[2], stride[2];
};

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

// Output positions along one spatial dim of `size` (padded), or <= 0 when none fit.
int64_t positions(int64_t size, const Window& w, int i) {
  return (size + 2 * w.padding[i] - (w.dilation[i] * (w.kernel[i] - 1) + 1)) / w.stride[i] + 1;
}

// The [.., oh, ow] window of a padded [.., H', W'] tensor at kernel offset (ki, kj).
at::Tensor window_at(const at::Tensor& padded, const Window& w, int64_t ki, int64_t kj,
                     int64_t out_h, int64_t out_w) {
  const int64_t top = ki * w.dilation[0], left = kj * w.dilation[1];
  return padded.slice(-2, top, top + (out_h - 1) * w.stride[0] + 1, w.stride[0])
      .slice(-1, left, left + (out_w - 1) * w.stride[1] + 1, w.stride[1]);
}

at::Tensor im2col(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef dilation,
                  at::IntArrayRef padding, at::IntArrayRef stride) {
  Window w;
  const bool batched = self.dim() == 4;
  bool native = (is_float(self) || self.scalar_type() == at::kBool) && self.is_privateuseone() &&
                (self.dim() == 3 || batched) &&
                read_window(kernel_size, dilation, padding, stride, &w);
  for (int64_t d = batched ? 1 : 0; native && d < self.dim(); ++d) native = self.size(d) > 0;
  const int64_t out_h = native ? positions(self.size(-2), w, 0) : 0;
  const int64_t out_w = native ? positions(self.size(-1), w, 1) : 0;
  if (!native || out_h < 1 || out_w < 1) {
    return OPENNEURON_FALLBACK(im2col, self, kernel_size, dilation, padding, stride);
  }
  OPENNEURON_NATIVE_OP("aten::im2col");
  const c10::DeviceGuard guard(self.device());
  const at::Tensor input = batched ? self : self.unsqueeze(0);
  const at::Tensor padded =
      at::constant_pad_nd(input, {w.padding[1], w.padding[1], w.padding[0], w.padding[0]}, 0);
  const int64_t n = input.size(0), channels = input.size(1);
  const int64_t taps = w.kernel[0] * w.kernel[1];
  at::Tensor columns = at::empty({n, channels, taps, out_h, out_w}, self.options());
  for (int64_t ki = 0; ki < w.kernel[0]; ++ki) {
    for (int64_t kj = 0; kj < w.kernel[1]; ++kj) {
      columns.select(2, ki * w.kernel[1] + kj).copy_(window_at(padded, w, ki, kj, out_h, out_w));
    }
  }
  at::Tensor result = columns.view({n, channels * taps, out_h * out_w});
  return batched ? result : result.squeeze(0);
}

at::Tensor col2im(const at::Tensor& self, at::IntArrayRef output_size,
                  at::IntArrayRef kernel_size, at::IntArrayRef dilation, at::IntArrayRef padding,
                  at::IntArrayRef stride) {
  Window w;
  const bool batched = self.dim() == 3;
  bool native = is_float(self) && self.is_privateuseone() && (self.dim() == 2 || batched) &&
                output_size.size() == 2 && read_window(kernel_size, dilation, padding, stride, &w);
  int64_t height = 0, width = 0, out_h = 0, out_w = 0, taps = 1;
  if (native) {
    height = output_size[0];
    width = output_size[1];
    out_h = positions(height, w, 0);
    out_w = positions(width, w, 1);
    taps = w.kernel[0] * w.kernel[1];
    native = height > 0 && width > 0 && out_h >= 1 && out_w >= 1 && self.size(-2) > 0 &&
             self.size(-2) % taps == 0 && self.size(-1) == out_h * out_w;
  }
  if (!native) {
    return OPENNEURON_FALLBACK(col2im, self, output_size, kernel_size, dilation, padding, stride);
  }
  OPENNEURON_NATIVE_OP("aten::col2im");
  const c10::DeviceGuard guard(self.device());
  const at::Tensor columns = batched ? self : self.unsqueeze(0);
  const int64_t n = columns.size(0), channels = columns.size(1) / taps;
  const at::Tensor windows = columns.reshape({n, channels, taps, out_h, out_w});
  at::Tensor padded =
      at::zeros({n, channels, height + 2 * w.padding[0], width + 2 * w.padding[1]}, self.options());
  for (int64_t ki = 0; ki < w.kernel[0]; ++ki) {
    for (int64_t kj = 0; kj < w.kernel[1]; ++kj) {
      window_at(padded, w, ki, kj, out_h, out_w).add_(windows.select(2, ki * w.kernel[1] + kj));
    }
  }
  at::Tensor result = padded.slice(2, w.padding[0], w.padding[0] + height)
                          .slice(3, w.padding[1], w.padding[1] + width)
                          .contiguous();
  return batched ? result : result.squeeze(0);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("im2col", TORCH_FN(im2col));
  m.impl("col2im", TORCH_FN(col2im));
}

}  // namespace openneuron::bridge
