// Integer matrix products with the CPU's wraparound semantics.
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// out[b] = beta * bias[b] + alpha * (a[b] @ b_mat[b]) for each batch b, every operand of one
// integer dtype (uint8, int8, int16, int32, int64). Views as for gemm (2-D or 3-D, any
// strides, bias nullptr or broadcast to out's sizes). Arithmetic is modulo 2^bits of the
// dtype, which is exactly what accumulating in the dtype with wraparound gives. beta == 0
// ignores bias. out must not alias the inputs.
void integer_gemm(const TensorView& out, const TensorView& a, const TensorView& b_mat,
                  const TensorView* bias, int64_t alpha, int64_t beta);

}  // namespace openneuron::kernels
