// Running maximum or minimum along one dimension with the index it came from (cummax/cummin).
#pragma once

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// values[.., i, ..] = the largest (or smallest) of in[.., 0..i, ..] along `dim`, indices[..]
// its position. As on the CPU, a later equal element takes over, and a NaN takes over and
// stays (each later NaN taking over in turn). values (in's dtype) and indices (int64) are
// shaped like in, any strides.
void running_extreme(const TensorView& values, const TensorView& indices, const TensorView& in,
                     int dim, bool largest);

}  // namespace openneuron::kernels
