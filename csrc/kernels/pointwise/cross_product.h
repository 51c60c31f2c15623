// The cross product of 3-vectors along one dimension (torch.linalg.cross).
#pragma once

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// out = a x b along dim, where out, a and b have the same ndim and dtype and size 3 at dim;
// a and b are broadcast to out's sizes (stride 0 where expanded); any strides. Integers wrap
// as two's complement; 16-bit floats are computed in fp32 and rounded once on store. Each
// triple is read before it is written, so out may be a or b itself.
void cross_product(const TensorView& out, const TensorView& a, const TensorView& b, int dim);

}  // namespace openneuron::kernels
