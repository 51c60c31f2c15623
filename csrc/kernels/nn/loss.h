// Negative log-likelihood and mean-squared-error losses, forward and backward.
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

enum class LossReduction { None = 0, Mean = 1, Sum = 2 };

// input [N, C, M] log-probabilities, target [N, M] (int64 class indices), weight [C] or
// nullptr. None: out [N, M] = -weight[t] * input[n, t, m] (0 where t == ignore_index);
// Mean: out [] = sum / total_weight; Sum: out [] = sum. total_weight [] = sum of weight[t]
// over non-ignored targets. Throws std::out_of_range for a target outside [0, C).
void nll_loss_forward(const TensorView& out, const TensorView& total_weight,
                      const TensorView& input, const TensorView& target, const TensorView* weight,
                      LossReduction reduction, int64_t ignore_index);

// grad_input [N, C, M] of nll_loss_forward; grad_out is [N, M] (None) or [] otherwise.
void nll_loss_backward(const TensorView& grad_input, const TensorView& grad_out,
                       const TensorView& target, const TensorView* weight, LossReduction reduction,
                       int64_t ignore_index, const TensorView& total_weight);

// input/target views of one shape (broadcast strides allowed). None: out has that shape;
// Mean/Sum: out [] (sum accumulated in double).
void mse_loss_forward(const TensorView& out, const TensorView& input, const TensorView& target,
                      LossReduction reduction);

// grad_input = 2 * (input - target) * grad_out (/ numel for Mean); grad_out broadcast to the
// input shape (stride 0 for a reduced loss).
void mse_loss_backward(const TensorView& grad_input, const TensorView& grad_out,
                       const TensorView& input, const TensorView& target, LossReduction reduction);

}  // namespace openneuron::kernels
