// 2-D convolution through oneDNN's convolution primitives (forward, backward data, backward
// weights). The batch is split across parallel_for threads, one single-threaded primitive per
// piece, so oneDNN never runs its own (spinning) OpenMP team.
#pragma once

#include "kernels/core/tensor_view.h"
#include "kernels/matmul/conv.h"

namespace openneuron::kernels {

// conv2d_forward's contract (conv.h) through oneDNN. float32 and bfloat16 run natively
// (bf16 products accumulate in fp32, rounded once on store); float16, layouts oneDNN cannot
// describe (stride-0 broadcasts) and bf16 problems without a native bf16 kernel go through
// dense fp32 copies. Returns false when oneDNN has no optimised kernel for the problem (or a
// size is zero); `out` may then hold partial results and must be recomputed.
bool dnnl_conv2d_forward(const TensorView& out, const TensorView& input, const TensorView& weight,
                         const TensorView* bias, const Conv2dParams& params);

// conv2d_backward's contract (conv.h) through oneDNN; same dtype rules as dnnl_conv2d_forward,
// and false likewise means every wanted gradient must be recomputed. Weight and bias gradients of
// the batch pieces are summed in fp32 and rounded once into 16-bit outputs.
bool dnnl_conv2d_backward(const TensorView* grad_input, const TensorView* grad_weight,
                          const TensorView* grad_bias, const TensorView& grad_out,
                          const TensorView& input, const TensorView& weight,
                          const Conv2dParams& params);

}  // namespace openneuron::kernels
