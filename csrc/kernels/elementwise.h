// relu/neg and relu's backward over strided device tensors (other elementwise math: pointwise.h).
#pragma once

#include "kernels/scalar.h"
#include "kernels/tensor_view.h"

namespace openneuron::kernels {

enum class UnaryOp { Relu, Neg };

// out = op(in); in has out's ndim and sizes (stride 0 along broadcast dims), any dtype, read in
// out's compute type: fp32 for 16-bit and 8-bit floats (rounded once on store), the float type
// itself for fp32/fp64, int64 for integers and bool. out may alias in exactly.
void unary(UnaryOp op, const TensorView& out, const TensorView& in);

// grad_in = (self > threshold) ? grad_out : 0 — the backward of relu/threshold.
void threshold_backward(const TensorView& grad_in, const TensorView& grad_out,
                        const TensorView& self, Scalar threshold);

}  // namespace openneuron::kernels
