// Scaled float8 matrix products (torch._scaled_mm, torch._scaled_grouped_mm): float8 operands
// multiplied with fp32 accumulation, then scaled per tensor or per row/column, as the
// Tensor engine does with its PSUM accumulator.
#pragma once

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// The scales of one product: 1-D fp32 views. scale_a holds 1 element (one scale for all of a)
// or M (one per row of a); scale_b 1 or N (one per column of b). bias is null or a 1-D view of
// N floating values; scale_result is null or 1 fp32 element, used only for a float8 out.
struct ProductScales {
  TensorView scale_a;
  TensorView scale_b;
  const TensorView* bias = nullptr;
  const TensorView* scale_result = nullptr;
};

// out [M, N] = a [M, K] @ b [K, N] with, for every element,
//   acc = the fp32 sum over k of a[i, k] * b[k, j] (each product is exact in fp32),
//   out[i, j] = round(acc * (scale_a[i] * scale_b[j]) + bias[j]),
// times scale_result before the rounding when out is float8. a and b are float8 (e4m3fn or
// e5m2, mixed allowed), any strides; out is fp32, bf16, fp16 or float8, any strides; the
// rounding is the one of a cast (nearest even; float8 saturates as PyTorch's .to() does).
// K == 0 gives acc = 0. Throws std::invalid_argument on shapes or dtypes outside this contract.
void scaled_gemm(const TensorView& out, const TensorView& a, const TensorView& b,
                 const ProductScales& scales);

// One scaled product per group, the groups laid out as grouped_gemm's (grouped_gemm.h) with
// offsets (int32 ends, clamped; null only for 3-D x 3-D). Scales are fp32, one per row of a
// and per column of b within each group:
//   a [T, K]    @ b [G, K, N]: scale_a [T],         scale_b [G, N];
//   a [G, M, K] @ b [K, T]:    scale_a [G, M],      scale_b [T];
//   a [M, T]    @ b [T, N]:    scale_a [G * M],     scale_b [G * N] (group g: [g*M, g*M+M));
//   a [G, M, K] @ b [G, K, N]: scale_a [G, M],      scale_b [G, N].
// Rows or columns of out past the last end, and the products of empty groups, are zero.
void scaled_grouped_gemm(const TensorView& out, const TensorView& a, const TensorView& b,
                         const TensorView& scale_a, const TensorView& scale_b,
                         const TensorView* offsets);

}  // namespace openneuron::kernels
