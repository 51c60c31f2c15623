// 2-D convolution (cross-correlation, as PyTorch defines it), forward and backward, by oneDNN
// convolution primitives, or im2col + sgemm where oneDNN declines. 1-D convolutions are 2-D
// ones with a height of 1.
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

struct Conv2dParams {
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
  int64_t groups = 1;
};

// out[N,O,OH,OW] = conv(input[N,C,H,W], weight[O,C/groups,KH,KW]) + bias[O].
// Any strides; float32/bfloat16/float16 (all views one dtype), computed in fp32.
// bias may be nullptr. OH/OW are taken from out and must match the params.
void conv2d_forward(const TensorView& out, const TensorView& input, const TensorView& weight,
                    const TensorView* bias, const Conv2dParams& params);

// Gradients of conv2d_forward. Each output pointer may be nullptr (not wanted).
// grad_input has input's shape, grad_weight weight's, grad_bias is [O].
void conv2d_backward(const TensorView* grad_input, const TensorView* grad_weight,
                     const TensorView* grad_bias, const TensorView& grad_out,
                     const TensorView& input, const TensorView& weight, const Conv2dParams& params);

}  // namespace openneuron::kernels
