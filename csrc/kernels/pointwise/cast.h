// Copy with dtype conversion between strided device tensors, and fill.
#pragma once

#include "kernels/core/scalar.h"
#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// dst[i] = convert(src[i]) for every index of dst. src has dst's ndim and sizes, with
// stride 0 along broadcast dims. Floats round to nearest even; float->int truncates;
// nonzero->true for bool. dst and src must not partially overlap.
void copy(const TensorView& dst, const TensorView& src);

// As copy(), where src holds unsigned integers of its element's width (its dtype, Int16, Int32
// or Int64, names only the width): PyTorch's conversions of uint16/uint32/uint64 values, which
// the compute dtypes cannot hold. Narrow floats round through fp32, as c10's conversions do.
void copy_from_unsigned(const TensorView& dst, const TensorView& src_bits);

// Sets every element of dst to value converted to dst's dtype.
void fill(const TensorView& dst, Scalar value);

}  // namespace openneuron::kernels
