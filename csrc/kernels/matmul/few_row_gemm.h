// Products of a few rows (a decode step's tokens) with 16-bit operands where no library reads
// them in place: the weight is read where it lies instead of widened whole on every call.
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// Products with at most this many rows take the few-row path.
constexpr int64_t kFewRowsMax = 16;

// out = beta * bias + alpha * (a @ b) (bias ignored when null or beta is 0), accumulated in
// fp32 in a fixed order (the same for every call of one layout) and rounded once into out. Applies, and returns true, when out, a
// and b are 2-D, a and b share bf16 or fp16, out is of their dtype or fp32, bias (if any) is
// of a's or out's dtype, out has at most kFewRowsMax rows, and b is unit-strided along k (a
// transposed weight) or along n. Otherwise returns false and touches nothing.
bool few_row_gemm(const TensorView& out, const TensorView& a, const TensorView& b,
                  const TensorView* bias, double alpha, double beta);

}  // namespace openneuron::kernels
