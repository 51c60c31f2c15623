// 3-D pooling over [N, C, D, H, W] views: max (with flat per-volume argmax indices), average
// and adaptive average, forward and backward, in fp32 (16-bit results rounded once).
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

struct Pool3dParams {
  int64_t kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t padding[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};
  bool count_include_pad = true;  // average pooling only
  int64_t divisor_override = 0;   // average pooling only; 0 = none
};

// out[N,C,OD,OH,OW] = window maxima (NaN wins, the first maximum is kept); indices (dense int64,
// out's shape) = (id * H + ih) * W + iw of each maximum. Output sizes come from out.
void max_pool3d_forward(const TensorView& out, const TensorView& indices, const TensorView& input,
                        const Pool3dParams& params);

// grad_input (zeroed first) accumulates grad_out at the saved indices (dense int64).
void max_pool3d_backward(const TensorView& grad_input, const TensorView& grad_out,
                         const TensorView& indices);

// Average pooling with PyTorch's divisor rules (count_include_pad, divisor_override).
void avg_pool3d_forward(const TensorView& out, const TensorView& input, const Pool3dParams& params);
void avg_pool3d_backward(const TensorView& grad_input, const TensorView& grad_out,
                         const Pool3dParams& params);

// Adaptive average pooling: output cell o covers input [floor(o*I/O), ceil((o+1)*I/O)) per dim.
void adaptive_avg_pool3d_forward(const TensorView& out, const TensorView& input);
void adaptive_avg_pool3d_backward(const TensorView& grad_input, const TensorView& grad_out);

}  // namespace openneuron::kernels
