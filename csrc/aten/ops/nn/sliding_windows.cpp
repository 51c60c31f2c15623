// One strided copy (or add) per kernel position: each moves the stride-spaced, dilation-offset
// window of every output position at once.
#include "aten/ops/nn/sliding_windows.h"

#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>

namespace openneuron::bridge {
namespace {

// The [.., oh, ow] window of a padded [.., H', W'] tensor at kernel offset (ki, kj).
at::Tensor window_at(const at::Tensor& padded, const Window& w, int64_t ki, int64_t kj,
                     int64_t out_h, int64_t out_w) {
  const int64_t top = ki * w.dilation[0], left = kj * w.dilation[1];
  return padded.slice(-2, top, top + (out_h - 1) * w.stride[0] + 1, w.stride[0])
      .slice(-1, left, left + (out_w - 1) * w.stride[1] + 1, w.stride[1]);
}

}  // namespace

int64_t window_positions(int64_t size, const Window& w, int i) {
  return (size + 2 * w.padding[i] - (w.dilation[i] * (w.kernel[i] - 1) + 1)) / w.stride[i] + 1;
}

at::Tensor gather_windows(const at::Tensor& input, const Window& w) {
  return gather_windows(input, w, window_positions(input.size(2), w, 0),
                        window_positions(input.size(3), w, 1), 0);
}

at::Tensor gather_windows(const at::Tensor& input, const Window& w, int64_t out_h, int64_t out_w,
                          const at::Scalar& fill) {
  int64_t after[2];
  const int64_t out[2] = {out_h, out_w};
  for (int i = 0; i < 2; ++i) {
    const int64_t reach = (out[i] - 1) * w.stride[i] + w.dilation[i] * (w.kernel[i] - 1) + 1;
    after[i] = std::max(w.padding[i], reach - input.size(2 + i) - w.padding[i]);
  }
  const at::Tensor padded =
      at::constant_pad_nd(input, {w.padding[1], after[1], w.padding[0], after[0]}, fill);
  const int64_t n = input.size(0), channels = input.size(1);
  const int64_t taps = w.kernel[0] * w.kernel[1];
  at::Tensor columns = at::empty({n, channels, taps, out_h, out_w}, input.options());
  for (int64_t ki = 0; ki < w.kernel[0]; ++ki) {
    for (int64_t kj = 0; kj < w.kernel[1]; ++kj) {
      columns.select(2, ki * w.kernel[1] + kj).copy_(window_at(padded, w, ki, kj, out_h, out_w));
    }
  }
  return columns.view({n, channels * taps, out_h * out_w});
}

at::Tensor scatter_windows(const at::Tensor& columns, int64_t height, int64_t width,
                           const Window& w) {
  return scatter_windows(columns, height, width, w, window_positions(height, w, 0),
                         window_positions(width, w, 1));
}

at::Tensor scatter_windows(const at::Tensor& columns, int64_t height, int64_t width,
                           const Window& w, int64_t out_h, int64_t out_w) {
  const int64_t taps = w.kernel[0] * w.kernel[1];
  const int64_t n = columns.size(0), channels = columns.size(1) / taps;
  const at::Tensor windows = columns.reshape({n, channels, taps, out_h, out_w});
  int64_t extent[2];
  const int64_t grid[2] = {out_h, out_w}, size[2] = {height, width};
  for (int i = 0; i < 2; ++i) {
    const int64_t reach = (grid[i] - 1) * w.stride[i] + w.dilation[i] * (w.kernel[i] - 1) + 1;
    extent[i] = std::max(size[i] + 2 * w.padding[i], reach);
  }
  at::Tensor padded = at::zeros({n, channels, extent[0], extent[1]}, columns.options());
  for (int64_t ki = 0; ki < w.kernel[0]; ++ki) {
    for (int64_t kj = 0; kj < w.kernel[1]; ++kj) {
      window_at(padded, w, ki, kj, out_h, out_w).add_(windows.select(2, ki * w.kernel[1] + kj));
    }
  }
  return padded.slice(2, w.padding[0], w.padding[0] + height)
      .slice(3, w.padding[1], w.padding[1] + width)
      .contiguous();
}

}  // namespace openneuron::bridge
