// Sorting along one dimension, and top-k.
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// Sorts every line of `in` along `dim` into values (in's dtype) and indices (int64), both
// shaped like in (any strides). The sort is stable (equal elements keep their order, for
// descending too); NaN sorts above +inf and -0.0 equals 0.0, as PyTorch compares.
void sort(const TensorView& values, const TensorView& indices, const TensorView& in, int dim,
          bool descending);

// The k largest (or smallest) elements of every line along `dim`, in sorted order (ties by
// lower index first); values and indices have in's shape with size k along dim.
void topk(const TensorView& values, const TensorView& indices, const TensorView& in, int dim,
          int64_t k, bool largest);

}  // namespace openneuron::kernels
