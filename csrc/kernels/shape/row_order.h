// The order that sorts the rows of a matrix lexicographically (unique along a dimension).
#pragma once

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// order (int64, n) = the stable permutation that sorts the n rows of `rows` (n x m, any
// strides) lexicographically, comparing elements as PyTorch's CPU unique(dim=) does: the first
// column where one row's element is less or greater decides, so NaN compares equal to anything.
void lexicographic_row_order(const TensorView& order, const TensorView& rows);

}  // namespace openneuron::kernels
