// Splitting floats into mantissa and power of two (torch.frexp).
#pragma once

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// mantissa[i] * 2^exponent[i] = in[i], with |mantissa| in [0.5, 1) (std::frexp): mantissa in
// in's floating dtype, exponent int32, all three of one shape (any strides). Zero, infinity
// and NaN keep their value with exponent 0.
void frexp(const TensorView& mantissa, const TensorView& exponent, const TensorView& in);

}  // namespace openneuron::kernels
