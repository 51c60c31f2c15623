// Sorting along one dimension, and top-k.
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// Sorts every line of `in` along `dim` into values (in's dtype) and indices (int64), both
// shaped like in (any strides). NaN sorts above +inf and -0.0 equals 0.0, as PyTorch compares.
// A stable sort keeps equal elements in order (for descending too). An unstable one leaves
// ties where the CPU's introsort leaves them for bool, 8- and 16-bit dtypes (the CPU sorts
// those with std::sort; its other dtypes use a vectorized sort whose tie order is its own,
// so they stay stable here).
void sort(const TensorView& values, const TensorView& indices, const TensorView& in, int dim,
          bool descending, bool stable);

// The k largest (or smallest) elements of every line along `dim`; values and indices have
// in's shape with size k along dim. Ties, and the order when `sorted` is false, are the CPU's:
// a partial sort when k * 64 <= length, else a selection of the k-th element followed (when
// sorted) by a sort of the ones before it.
void topk(const TensorView& values, const TensorView& indices, const TensorView& in, int dim,
          int64_t k, bool largest, bool sorted);

}  // namespace openneuron::kernels
