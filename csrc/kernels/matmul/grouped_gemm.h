// Grouped matrix products (torch._grouped_mm): every expert of a mixture of experts in one call.
#pragma once

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// One product per group g, with the groups' ends along the grouped dimension given by
// `offsets` (int32, one per group, read when the kernel runs; each end is clamped to
// [previous end, extent], so out-of-order or too-large ends make empty groups):
//   a [T, K]    @ b [G, K, N] -> out [T, N]:    rows [s, e) of a and out use b[g];
//   a [G, M, K] @ b [K, T]    -> out [M, T]:    columns [s, e) of b and out use a[g];
//   a [M, T]    @ b [T, N]    -> out [G, M, N]: out[g] = a[:, s:e] @ b[s:e, :] (zeros if empty);
//   a [G, M, K] @ b [G, K, N] -> out [G, M, N]: a batched product (offsets unused, may be null).
// Rows or columns of out past the last end are set to zero. Any strides; operands share one
// floating dtype and are multiplied as gemm() multiplies them (fp32 accumulation, one rounding).
void grouped_gemm(const TensorView& out, const TensorView& a, const TensorView& b,
                  const TensorView* offsets);

}  // namespace openneuron::kernels
