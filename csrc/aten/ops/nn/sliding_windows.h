// Sliding 2-D windows as strided device copies and adds: the gather behind im2col and integer
// convolution, the scatter-add behind col2im and integer transposed convolution. Any dtype.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

#include <cstdint>

namespace openneuron::bridge {

struct Window {
  int64_t kernel[2], dilation[2], padding[2], stride[2];
};

// Output positions along spatial dim i of an input of `size` (padded); <= 0 when none fit.
int64_t window_positions(int64_t size, const Window& w, int i);

// [N, C, H, W] -> [N, C * kh * kw, oh * ow]: every window's elements, kernel position major
// within each channel (the layout of torch.nn.functional.unfold). oh and ow must be >= 1.
at::Tensor gather_windows(const at::Tensor& input, const Window& w);

// As above for an output of out_h x out_w positions (ceil-mode pooling's last windows may
// reach past the padding; they are padded further), the padding holding `fill`.
at::Tensor gather_windows(const at::Tensor& input, const Window& w, int64_t out_h, int64_t out_w,
                          const at::Scalar& fill);

// The adjoint: [N, C * kh * kw, oh * ow] summed back into [N, C, height, width], adding kernel
// positions in order (the order the CPU's col2im sums overlapping windows in).
at::Tensor scatter_windows(const at::Tensor& columns, int64_t height, int64_t width,
                           const Window& w);

// As above for a grid of out_h x out_w windows that need not be all an image of that size
// fits (a transposed convolution's output padding may add rows no window reaches: zeros).
at::Tensor scatter_windows(const at::Tensor& columns, int64_t height, int64_t width,
                           const Window& w, int64_t out_h, int64_t out_w);

}  // namespace openneuron::bridge
