// Elementwise regression and binary classification losses, forward and backward: Huber,
// smooth L1 and binary cross-entropy.
#pragma once

#include "kernels/core/tensor_view.h"
#include "kernels/nn/loss.h"

namespace openneuron::kernels {

enum class PointwiseLoss { Huber, SmoothL1, BinaryCrossEntropy };

// Per element, with d = input - target:
//   Huber (param = delta > 0):   |d| < delta ? d*d/2 : delta * (|d| - delta/2)
//   SmoothL1 (param = beta >= 0): |d| < beta ? d*d/(2*beta) : |d| - beta/2
//   BinaryCrossEntropy:          -weight * (t*max(log x, -100) + (1-t)*max(log(1-x), -100))
// input, target (and weight, BCE only, else nullptr) share one shape (broadcast strides
// allowed). None: out has that shape; Mean/Sum: out [] (sum in double). fp32 arithmetic, each
// result rounded once into out's dtype.
void pointwise_loss_forward(const TensorView& out, const TensorView& input,
                            const TensorView& target, const TensorView* weight, PointwiseLoss loss,
                            LossReduction reduction, double param);

// grad_input of pointwise_loss_forward: grad_out is broadcast to the input shape (stride 0 for
// a reduced loss); Mean divides by the element count.
void pointwise_loss_backward(const TensorView& grad_input, const TensorView& grad_out,
                             const TensorView& input, const TensorView& target,
                             const TensorView* weight, PointwiseLoss loss, LossReduction reduction,
                             double param);

}  // namespace openneuron::kernels
