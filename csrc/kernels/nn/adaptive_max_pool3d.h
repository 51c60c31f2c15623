// Adaptive max pooling over [N, C, D, H, W] views. Its gradient is max_pool3d_backward
// (pool3d.h): both scatter to the saved per-volume indices.
#pragma once

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// out[n, c, od, oh, ow] = the maximum of input[n, c] over depths [floor(od*D/OD),
// ceil((od+1)*D/OD)) and the rows and columns likewise; indices (int64, out's shape, any
// strides) = (id * H + ih) * W + iw of that maximum. The first maximum is kept and NaN wins
// (the last NaN of a window), as on PyTorch's CPU. float32/bfloat16/float16, any strides;
// OD, OH and OW come from out. Throws std::invalid_argument for other shapes.
void adaptive_max_pool3d_forward(const TensorView& out, const TensorView& indices,
                                 const TensorView& input);

}  // namespace openneuron::kernels
