// Inclusive scans (cumulative sum, product and log-sum-exp) along one dimension.
#pragma once

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

enum class ScanOp { Sum, Prod, LogSumExp };  // LogSumExp: floats only

// out[..., i, ...] = op over in[..., 0..i, ...] along `dim`. out and in share sizes (any
// strides and dtypes). Floats accumulate in double, integers and bool in int64; each output
// element is rounded once from the running value, as PyTorch CPU does.
void scan(ScanOp op, const TensorView& out, const TensorView& in, int dim);

}  // namespace openneuron::kernels
