// 2-D pooling over [N, C, H, W] views (1-D pooling is 2-D pooling with a height of 1):
// max (with flat per-plane argmax indices), average and adaptive average, with backward.
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

struct Pool2dParams {
  int64_t kernel[2] = {1, 1};
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
  bool count_include_pad = true;  // average pooling only
  int64_t divisor_override = 0;   // average pooling only; 0 = none
};

// out[N,C,OH,OW] = window maxima (NaN wins, like PyTorch); indices (dense int64, out's shape)
// = ih * W + iw of each maximum. Output sizes come from out (ceil_mode decides them).
void max_pool2d_forward(const TensorView& out, const TensorView& indices, const TensorView& input,
                        const Pool2dParams& params);

// grad_input (zeroed first) accumulates grad_out at the saved indices.
void max_pool2d_backward(const TensorView& grad_input, const TensorView& grad_out,
                         const TensorView& indices);

// Average pooling with PyTorch's divisor rules (count_include_pad, divisor_override).
void avg_pool2d_forward(const TensorView& out, const TensorView& input, const Pool2dParams& params);
void avg_pool2d_backward(const TensorView& grad_input, const TensorView& grad_out,
                         const Pool2dParams& params);

// Adaptive average pooling: output cell o covers input [floor(o*I/O), ceil((o+1)*I/O)).
void adaptive_avg_pool2d_forward(const TensorView& out, const TensorView& input);
void adaptive_avg_pool2d_backward(const TensorView& grad_input, const TensorView& grad_out);

}  // namespace openneuron::kernels
