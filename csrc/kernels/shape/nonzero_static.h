// torch.nonzero_static: the coordinates of the first nonzero elements, in a result of fixed size.
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// out ([rows, in.ndim] int64, any strides): row r holds the coordinates of in's r-th nonzero
// element in row-major order (NaN is nonzero); rows past the number of nonzero elements hold
// fill_value in every column. Elements after the rows-th nonzero one are not read.
void nonzero_static(const TensorView& out, const TensorView& in, int64_t fill_value);

}  // namespace openneuron::kernels
