// GEMM epilogues: a matrix product and the fused elementwise body that consumes it (bias,
// activation, residual, cast) as one step, so the product needs no buffer of its own when an
// output can hold it, and no separate ATen call.
//
// The product is the kernel library's own gemm (kernels::gemm, the call eager makes), and the
// body runs each op's own eager loop (run_fused_kernel), so results equal eager's unfused ops
// bit for bit.
//
// Measured and rejected: computing the product in row panels with the body applied to each
// panel while it is in cache. Panels of 128 KiB were slower (2048x256x1024 with gelu and a
// residual add: 12.6 ms against 10.1 ms unfused, CPU time), because every gemm call packs all of
// b again; one panel per thread was 6% slower, because concurrent runs of one oneDNN primitive
// serialise, and giving each panel its own primitive through a padded row stride changed the
// product's bits.
#pragma once

#include "compiler/fused_kernel.h"
#include "kernels/core/tensor_view.h"

namespace openneuron::compiler {

// Computes product = alpha * a @ b (+ beta * bias when bias is set; a [M, K], b [K, N], bias
// broadcast to [M, N], product [M, N] with rows dense), then runs `kernel` (built from a
// gemm_epilogue body: input 0 is the product) over the iteration shape of outputs[0], which has
// M * N elements and last dim N and reads the product's rows in order. `inputs` are the body's
// inputs 1.. (kernel.num_inputs - 1 of them) broadcast to that shape. The product may be an
// output's buffer when the body reads it before writing that output; nothing else may alias.
// Throws std::invalid_argument when the shapes do not fit.
void run_gemm_epilogue(const FusedKernel& kernel, const kernels::TensorView& a,
                       const kernels::TensorView& b, const kernels::TensorView* bias, double alpha,
                       double beta, const kernels::TensorView& product,
                       const kernels::TensorView* outputs, const kernels::TensorView* inputs);

}  // namespace openneuron::compiler
