// Order statistics along one dimension (k-th smallest, median, mode) with their indices.
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// Each reduces every line of `in` along `dim` to one element and its index: values (in's
// dtype) and indices (int64) have in's ndim with size 1 along dim. Among equal elements the
// index is the one PyTorch's CPU kernels return, so the results match the CPU's bit for bit.

// The k-th smallest (k from 1), NaN largest: the CPU's median-of-three quickselect.
void kthvalue(const TensorView& values, const TensorView& indices, const TensorView& in, int dim,
              int64_t k);

// The lower median. A line holding NaN gives its first NaN, unless ignore_nan (nanmedian),
// which takes the median of the other elements (of all of them when every one is NaN).
void median(const TensorView& values, const TensorView& indices, const TensorView& in, int dim,
            bool ignore_nan);

// The most frequent element (the smallest such value on a tie of counts), with the index the
// CPU's sort of the line leaves last among its copies.
void mode(const TensorView& values, const TensorView& indices, const TensorView& in, int dim);

}  // namespace openneuron::kernels
