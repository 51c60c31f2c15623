// Creation and triangular kernels: arange, linspace, logspace, eye, tril/triu.
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

// out[i] = base ** (start + i * step), step = (end - start) / (n - 1), for a 1-D out of n
// elements, as PyTorch's CPU logspace: start and end first take out's dtype (16-bit floats
// also round their difference), exponents and powers run in double, the second half counts
// back from end, and each value is rounded once to out's dtype. One element is base ** start.
void logspace(const TensorView& out, Scalar start, Scalar end, double base);

// out (2 x N, int32 or int64) = the row-major coordinates of a row x col matrix's lower
// (j <= i + offset) or, when upper, upper (j >= i + offset) triangle: rows in out[0], columns
// in out[1]. N must be the triangle's element count.
void triangle_indices(const TensorView& out, int64_t row, int64_t col, int64_t offset, bool upper);

// out (2-D) = identity: 1 on the main diagonal, 0 elsewhere.
void eye(const TensorView& out);

// out[..., i, j] = in[..., i, j] where j - i >= diagonal (upper) or j - i <= diagonal (lower),
// else 0. out and in share sizes and dtype (ndim >= 2); out may alias in exactly.
void triangle(const TensorView& out, const TensorView& in, int64_t diagonal, bool upper);

}  // namespace openneuron::kernels
