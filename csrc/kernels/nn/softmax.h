// Softmax and log-softmax along one dimension, forward and backward.
#pragma once

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// out = softmax(in) (or log_softmax when log) along dim; out and in share shape.
// Computed in fp32 (double for float64) with the max subtracted first.
void softmax(const TensorView& out, const TensorView& in, int dim, bool log);

// grad_in from grad_out and the forward output:
// softmax:     grad_in = out * (grad_out - sum(grad_out * out))
// log_softmax: grad_in = grad_out - exp(out) * sum(grad_out)
void softmax_backward(const TensorView& grad_in, const TensorView& grad_out, const TensorView& out,
                      int dim, bool log);

}  // namespace openneuron::kernels
