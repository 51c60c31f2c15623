// Multi-label margin loss (PyTorch's multilabel_margin_loss), forward and backward.
#pragma once

#include "kernels/core/tensor_view.h"
#include "kernels/nn/loss.h"

namespace openneuron::kernels {

// input [N, C] (float32/bfloat16/float16, any strides); target [N, C] int64, each value already
// checked to lie in [-1, C): row n's targets are its values before the first -1. is_target
// [N, C] (input's dtype) = 1 where the class is one of the row's targets, else 0. Per row:
// sum over targets j and classes i with is_target 0 of max(0, 1 - x[j] + x[i]), divided by C.
// None: out [N]; Mean: out [] = the rows' mean (NaN for no rows); Sum: out [] = their sum.
// Computed in double, rounded once.
void multilabel_margin_loss_forward(const TensorView& out, const TensorView& is_target,
                                    const TensorView& input, const TensorView& target,
                                    LossReduction reduction);

// grad_input [N, C] of the forward, from the is_target it returned (the classes it excludes as
// targets are those, not recomputed); grad_out is [N] (None) or [] otherwise.
void multilabel_margin_loss_backward(const TensorView& grad_input, const TensorView& grad_out,
                                     const TensorView& input, const TensorView& target,
                                     const TensorView& is_target, LossReduction reduction);

}  // namespace openneuron::kernels
