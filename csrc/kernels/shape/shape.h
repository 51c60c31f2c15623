// Creation and triangular kernels: arange, linspace, eye, tril/triu.
#pragma once

#include <cstdint>

#include "kernels/core/scalar.h"
#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// out (1-D) [i] = start + i * step, computed in double (int64 for integer outputs).
void arange(const TensorView& out, Scalar start, Scalar step);

// out (1-D, n elements) evenly spaced from start to end: the first half counts up from start,
// the second down from end, as PyTorch does (fp32 math for float outputs, double for ints).
void linspace(const TensorView& out, Scalar start, Scalar end);

// out (2-D) = identity: 1 on the main diagonal, 0 elsewhere.
void eye(const TensorView& out);

// out[..., i, j] = in[..., i, j] where j - i >= diagonal (upper) or j - i <= diagonal (lower),
// else 0. out and in share sizes and dtype (ndim >= 2); out may alias in exactly.
void triangle(const TensorView& out, const TensorView& in, int64_t diagonal, bool upper);

}  // namespace openneuron::kernels
