// Multi-class margin loss (PyTorch's multi_margin_loss), forward and backward.
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"
#include "kernels/nn/loss.h"

namespace openneuron::kernels {

// input [N, C], target [N] (int64 classes, already checked to lie in [0, C)), weight [C] or
// nullptr. Per sample: sum over j != t of (w[t] * max(0, margin - x[t] + x[j])^p) / C, with
// p 1 or 2. None: out [N]; Mean/Sum: out [] (sum in double). fp32 arithmetic, rounded once.
void multi_margin_loss_forward(const TensorView& out, const TensorView& input,
                               const TensorView& target, const TensorView* weight, int64_t p,
                               double margin, LossReduction reduction);

// grad_input [N, C]; grad_out is [N] (None) or [] (reduced).
void multi_margin_loss_backward(const TensorView& grad_input, const TensorView& grad_out,
                                const TensorView& input, const TensorView& target,
                                const TensorView* weight, int64_t p, double margin,
                                LossReduction reduction);

}  // namespace openneuron::kernels
