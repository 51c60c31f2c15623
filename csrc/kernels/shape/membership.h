// Set membership (torch.isin).
#pragma once

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// out (bool, elements' shape) = whether each element equals some element of `test` (any shape),
// negated when `invert`. elements and test share one non-bool dtype (the caller promotes them);
// NaN equals nothing and -0.0 equals 0.0, as ==. Sorts a copy of `test` once, then one binary
// search per element. Views may have any strides.
void isin(const TensorView& out, const TensorView& elements, const TensorView& test, bool invert);

}  // namespace openneuron::kernels
