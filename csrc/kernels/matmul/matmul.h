// Dense matrix products through a BLAS library, accumulating in fp32.
#pragma once

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// out[b] = beta * bias[b] + alpha * (a[b] @ b_mat[b]) for each batch b.
// Views are 2-D ([M,K] @ [K,N] -> [M,N]) or 3-D with a leading batch dim; any strides
// (stride 0 broadcasts). bias is nullptr or has out's ndim with broadcast strides.
// Floating dtypes only (all operands the same dtype); 16-bit inputs are widened to fp32,
// multiplied with fp32 accumulation and rounded once on store. A float32 out with bf16/fp16
// a, b keeps the fp32 result unrounded; its bias may be of a's dtype or fp32. out must not
// alias inputs.
void gemm(const TensorView& out, const TensorView& a, const TensorView& b_mat,
          const TensorView* bias, double alpha, double beta);

}  // namespace openneuron::kernels
