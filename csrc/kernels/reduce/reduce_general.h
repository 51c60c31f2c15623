// Reductions beyond sum/mean: variance, extremes (with indices), product, norms, all/any,
// logsumexp, over any set of dimensions.
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

enum class GeneralReduceOp {
  Var,         // primary = var (or std), secondary (optional) = mean
  Max,         // primary = max value, secondary (optional) = int64 index of the first max
  Min,         // primary = min value, secondary (optional) = int64 index of the first min
  ArgMax,      // primary = int64 index of the first max
  ArgMin,      // primary = int64 index of the first min
  Prod,        // primary = product
  Norm,        // primary = vector norm of order params.p
  All,         // primary = all elements nonzero
  Any,         // primary = any element nonzero
  LogSumExp,   // primary = log(sum(exp(x)))
  BitwiseXor,  // primary = XOR of the elements (integers and bool, as int64)
};

struct GeneralReduceParams {
  double correction = 1.0;  // Var: divisor is max(N - correction, 0)
  bool take_sqrt = false;   // Var: produce the standard deviation
  double p = 2.0;           // Norm: order (0, 1, 2, +-inf or any other)
};

// Reduces `in` over every dim d where reduce_dims has bit d set (in's ndim <= 31). primary and
// secondary are in keepdim layout (in's ndim, size 1 on reduced dims, any strides, any dtype);
// secondary.data may be null when not wanted. NaN propagates through Max/Min/ArgMax/ArgMin (the
// first NaN wins) and every float op; ties pick the lowest row-major index over the reduced
// dims. Floats compute in double, integers and bool in int64, each result rounded once.
// The caller rejects empty reductions where PyTorch does (max, argmax, ...).
void reduce_general(GeneralReduceOp op, const GeneralReduceParams& params,
                    const TensorView& primary, const TensorView& secondary, const TensorView& in,
                    uint32_t reduce_dims);

}  // namespace openneuron::kernels
