// Adaptive max pooling over [N, C, H, W] views (1-D is 2-D with a height of 1). Its gradient
// is max_pool2d_backward (pooling.h): both scatter to the saved per-plane indices.
#pragma once

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// out[n, c, oh, ow] = the maximum of input[n, c] over rows [floor(oh*H/OH), ceil((oh+1)*H/OH))
// and the columns likewise; indices (int64, out's shape, any strides) = ih * W + iw of that
// maximum. NaN wins (the last NaN of a window), as on PyTorch's CPU. float32/bfloat16/float16,
// any strides; OH and OW come from out. Throws std::invalid_argument for other shapes.
void adaptive_max_pool2d_forward(const TensorView& out, const TensorView& indices,
                                 const TensorView& input);

}  // namespace openneuron::kernels
