// One SGD step of one parameter tensor in a single pass (torch's _fused_sgd_).
#pragma once

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

struct SgdHyperparameters {
  double lr = 1e-3;
  double weight_decay = 0.0;
  double momentum = 0.0;
  double dampening = 0.0;
  bool nesterov = false;
  bool maximize = false;
  bool is_first_step = false;  // the momentum buffer starts as the (decayed) gradient
};

// Updates param (and momentum_buffer, when momentum != 0) in place from grad. All tensors share
// param's shape and a floating dtype; math is fp32 with the coefficients rounded to fp32, in
// PyTorch's CPU kernel's order. grad_scale, when not null, divides grad first (and the unscaled
// grad is written back). momentum_buffer is not read when momentum == 0. Any layout is accepted.
void fused_sgd(const TensorView& param, const TensorView& grad, const TensorView& momentum_buffer,
               const SgdHyperparameters& hyper, const float* grad_scale);

}  // namespace openneuron::kernels
