// Elementwise arithmetic and activations over strided, broadcast device tensors.
#pragma once

#include "kernels/scalar.h"
#include "kernels/tensor_view.h"

namespace openneuron::kernels {

enum class BinaryOp { Add, Sub, Mul, Div };

// out = a + alpha*b (Add), a - alpha*b (Sub), a*b (Mul), a/b (Div).
// a and b have out's ndim and sizes (stride 0 along broadcast dims) and may have any
// dtypes; they are read in out's compute type: fp32 for 16-bit and 8-bit floats (rounded
// once on store), the float type itself for fp32/fp64, int64 for integers and bool.
// out may alias a or b exactly (in-place).
void binary(BinaryOp op, const TensorView& out, const TensorView& a, const TensorView& b,
            Scalar alpha);

enum class UnaryOp { Relu, Neg };

// out = op(in); same shape contract and compute types as binary().
void unary(UnaryOp op, const TensorView& out, const TensorView& in);

// grad_in = (self > threshold) ? grad_out : 0 — the backward of relu/threshold.
void threshold_backward(const TensorView& grad_in, const TensorView& grad_out,
                        const TensorView& self, Scalar threshold);

}  // namespace openneuron::kernels
