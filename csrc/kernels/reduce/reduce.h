// Reductions over any set of dimensions.
#pragma once

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

enum class ReduceOp { Sum, Mean };

// Reduces `in` over every dim d where out.sizes[d] == 1 and in.sizes[d] != 1, or where
// reduce_dims has bit d set. out has in's ndim (keepdim layout, any strides).
// Floats accumulate in double and round once on store; integers and bool accumulate in
// int64. An empty reduction yields 0 for Sum and NaN for Mean.
void reduce(ReduceOp op, const TensorView& out, const TensorView& in, uint32_t reduce_dims);

}  // namespace openneuron::kernels
