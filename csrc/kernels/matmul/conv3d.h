// 3-D convolution and 3-D transposed convolution, forward and backward, as sums over the kernel's
// depth of 2-D convolutions (conv.h): output depth slice od gathers, for each kernel depth kd,
// the 2-D convolution of input depth slice od*stride - padding + kd*dilation with weight slice kd.
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

struct Conv3dParams {
  int64_t stride[3] = {1, 1, 1};
  int64_t padding[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};
  int64_t groups = 1;
};

// out[N,O,OD,OH,OW] = conv3d(input[N,C,D,H,W], weight[O,C/groups,KD,KH,KW]) + bias[O]. Any
// strides; float32, bfloat16 or float16 (mixed allowed), computed in fp32 and rounded once into
// out. bias may be nullptr. Output sizes are taken from out and must match the params.
void conv3d_forward(const TensorView& out, const TensorView& input, const TensorView& weight,
                    const TensorView* bias, const Conv3dParams& params);

// Gradients of conv3d_forward; each output pointer may be nullptr (not wanted). grad_input has
// input's shape, grad_weight weight's, grad_bias is [O]. Sums are kept in fp32, rounded once.
void conv3d_backward(const TensorView* grad_input, const TensorView* grad_weight,
                     const TensorView* grad_bias, const TensorView& grad_out,
                     const TensorView& input, const TensorView& weight, const Conv3dParams& params);

// out[N,O,OD,OH,OW] = conv_transpose3d(input[N,C,D,H,W], weight[C,O/groups,KD,KH,KW]) + bias[O]
// (the input gradient of a convolution); output padding, each below its stride, comes from
// out's sizes. Dtype rules as conv3d_forward.
void conv_transpose3d_forward(const TensorView& out, const TensorView& input,
                              const TensorView& weight, const TensorView* bias,
                              const Conv3dParams& params);

// Gradients of conv_transpose3d_forward (each output pointer may be nullptr).
void conv_transpose3d_backward(const TensorView* grad_input, const TensorView* grad_weight,
                               const TensorView* grad_bias, const TensorView& grad_out,
                               const TensorView& input, const TensorView& weight,
                               const Conv3dParams& params);

}  // namespace openneuron::kernels
