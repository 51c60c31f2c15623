// Batch, group, layer and RMS normalisation, forward and backward. Statistics accumulate in
// double; elementwise math is fp32; per-channel/per-row vectors may have any float dtype.
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// input/out viewed as [N, C, M] (M = product of the spatial dims). weight/bias [C] or nullptr.
// training: normalises with batch statistics, writes save_mean/save_invstd [C] (if non-null),
// and updates running_mean/running_var [C] (if non-null) with momentum, the variance unbiased.
// eval: normalises with running_mean/running_var (required).
void batch_norm_forward(const TensorView& out, const TensorView* save_mean,
                        const TensorView* save_invstd, const TensorView& input,
                        const TensorView* weight, const TensorView* bias,
                        const TensorView* running_mean, const TensorView* running_var,
                        bool training, double momentum, double eps);

// Gradients of batch_norm_forward ([N, C, M] views). training: mean/invstd are the saved batch
// statistics; eval: mean is running_mean and invstd is computed from running_var and eps
// (pass running_var as `invstd_or_var`). Any output pointer may be nullptr.
void batch_norm_backward(const TensorView* grad_input, const TensorView* grad_weight,
                         const TensorView* grad_bias, const TensorView& grad_out,
                         const TensorView& input, const TensorView* weight, const TensorView& mean,
                         const TensorView& invstd_or_var, bool training, double eps);

// input/out [N, C, M]; groups split C; mean/rstd [N, groups] (any float dtype).
void group_norm_forward(const TensorView& out, const TensorView& mean, const TensorView& rstd,
                        const TensorView& input, const TensorView* weight, const TensorView* bias,
                        int64_t groups, double eps);
void group_norm_backward(const TensorView* grad_input, const TensorView* grad_weight,
                         const TensorView* grad_bias, const TensorView& grad_out,
                         const TensorView& input, const TensorView& mean, const TensorView& rstd,
                         const TensorView* weight, int64_t groups);

// input/out [R, D] rows normalised over D; mean/rstd [R]; weight/bias [D] or nullptr.
// rms = true: RMS norm (no centring, no bias; mean is ignored and may be nullptr).
void row_norm_forward(const TensorView& out, const TensorView* mean, const TensorView& rstd,
                      const TensorView& input, const TensorView* weight, const TensorView* bias,
                      double eps, bool rms);
void row_norm_backward(const TensorView* grad_input, const TensorView* grad_weight,
                       const TensorView* grad_bias, const TensorView& grad_out,
                       const TensorView& input, const TensorView* mean, const TensorView& rstd,
                       const TensorView* weight, bool rms);

}  // namespace openneuron::kernels
