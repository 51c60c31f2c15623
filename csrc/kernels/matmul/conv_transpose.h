// 2-D transposed convolution (PyTorch's conv_transpose1d/2d), forward and backward, expressed
// through the convolution kernels: its forward is a convolution's input gradient, its input
// gradient a convolution, its weight gradient a convolution's weight gradient with the roles of
// input and output exchanged. 1-D problems are 2-D ones with a height of 1.
#pragma once

#include "kernels/core/tensor_view.h"
#include "kernels/matmul/conv.h"

namespace openneuron::kernels {

// out[N, O, OH, OW] = conv_transpose(input[N, C, H, W], weight[C, O/groups, KH, KW]) + bias[O],
// with OH = (H-1)*stride - 2*padding + dilation*(KH-1) + output_padding + 1 (likewise OW), the
// output padding (each below its stride) taken from out's sizes. Any strides; float32, bfloat16
// or float16 (mixed allowed), computed in fp32 and rounded once into out. bias may be nullptr.
// Throws std::invalid_argument for shapes that do not fit these rules.
void conv_transpose2d_forward(const TensorView& out, const TensorView& input,
                              const TensorView& weight, const TensorView* bias,
                              const Conv2dParams& params);

// Gradients of conv_transpose2d_forward; each output pointer may be nullptr (not wanted).
// grad_input has input's shape, grad_weight weight's, grad_bias is [O].
void conv_transpose2d_backward(const TensorView* grad_input, const TensorView* grad_weight,
                               const TensorView* grad_bias, const TensorView& grad_out,
                               const TensorView& input, const TensorView& weight,
                               const Conv2dParams& params);

}  // namespace openneuron::kernels
