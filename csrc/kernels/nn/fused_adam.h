// One Adam/AdamW update of one parameter tensor, done in a single pass (torch's _fused_adam_).
#pragma once

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

struct AdamHyperparameters {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double weight_decay = 0.0;
  double eps = 1e-8;
  bool amsgrad = false;
  bool maximize = false;
  bool decoupled_weight_decay = false;  // AdamW: param *= 1 - lr * weight_decay
};

// Updates param, exp_avg, exp_avg_sq (and max_exp_avg_sq when amsgrad) in place from grad, at
// optimizer step `step` (the already-incremented count). All tensors share param's shape;
// param and the states share one floating dtype; math is fp32 (coefficients in double, as
// PyTorch's kernels derive them). grad_scale, when not null, divides grad first (and the
// unscaled grad is written back, as PyTorch does). Any layout is accepted; dense tensors are fast.
void fused_adam(const TensorView& param, const TensorView& grad, const TensorView& exp_avg,
                const TensorView& exp_avg_sq, const TensorView& max_exp_avg_sq, double step,
                const AdamHyperparameters& hyper, const float* grad_scale);

}  // namespace openneuron::kernels
