// Epilogues: a product (a GEMM, a batched GEMM or a 2-D convolution) and the fused elementwise
// body that consumes it (bias, activation, scale, mask or residual add, cast) as one step, so
// the product needs no buffer of its own when an output can hold it, and no separate ATen call.
//
// The product is the kernel library's own call (kernels::gemm, kernels::conv2d_forward: the
// calls eager makes), and the body runs each op's own eager loop (run_fused_kernel), so results
// equal eager's unfused ops bit for bit.
//
// Measured and rejected: computing the product in row panels with the body applied to each
// panel while it is in cache. Panels of 128 KiB were slower (2048x256x1024 with gelu and a
// residual add: 12.6 ms against 10.1 ms unfused, CPU time), because every gemm call packs all of
// b again; one panel per thread was 6% slower, because concurrent runs of one oneDNN primitive
// serialise, and giving each panel its own primitive through a padded row stride changed the
// product's bits.
#pragma once

#include <cstddef>

#include "compiler/fused_kernel.h"
#include "compiler/ir.h"
#include "kernels/core/tensor_view.h"
#include "kernels/matmul/conv.h"

namespace openneuron::compiler {

// How many of a gemm_epilogue node's inputs are its product's operands (the body's inputs
// follow): a and b, and the bias of gemm="addmm" or of gemm="conv" with bias=1.
size_t epilogue_operands(const Node& node);

// The convolution parameters of a gemm="conv" node (stride, padding, dilation, groups attrs).
kernels::Conv2dParams conv_params_of(const Node& node);

// Computes product = alpha * a @ b (+ beta * bias when bias is set; a [M, K], b [K, N], product
// [M, N]; or batched: a [B, M, K], b [B, K, N], product [B, M, N]; bias broadcast to the
// product's shape; the product dense and row-major), then runs `kernel` (built from a
// gemm_epilogue body: input 0 is the product) over the iteration shape of outputs[0], which has
// the product's element count and last dim N and reads the product's elements in order.
// `inputs` are the body's inputs 1.. (kernel.num_inputs - 1 of them) broadcast to that shape.
// The product may be an output's buffer when the body reads it before writing that output;
// nothing else may alias. Throws std::invalid_argument when the shapes do not fit.
void run_gemm_epilogue(const FusedKernel& kernel, const kernels::TensorView& a,
                       const kernels::TensorView& b, const kernels::TensorView* bias, double alpha,
                       double beta, const kernels::TensorView& product,
                       const kernels::TensorView* outputs, const kernels::TensorView* inputs);

// The same for a convolution: product [N, O, OH, OW] (dense, NCHW) = conv2d_forward(input,
// weight, bias) with `params`; the iteration shape of outputs[0] is the product's shape.
void run_conv_epilogue(const FusedKernel& kernel, const kernels::TensorView& input,
                       const kernels::TensorView& weight, const kernels::TensorView* bias,
                       const kernels::Conv2dParams& params, const kernels::TensorView& product,
                       const kernels::TensorView* outputs, const kernels::TensorView* inputs);

}  // namespace openneuron::compiler
