// Private fast path of the layer/RMS norm kernels (normalization.h's row_norm_*): rows whose
// elements are contiguous, one dtype (float32/bfloat16/float16) for the row tensors. Each
// row is widened once into a per-thread fp32 buffer, reduced in double lanes and written
// back with one rounding, in parallel over rows; no whole-tensor working copies.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "kernels/tensor_view.h"

namespace openneuron::kernels::normalization_rows {

// Whether the fast path takes these [R, D] views (non-null ones; rows of any stride).
bool supports(std::initializer_list<const TensorView*> row_views);

// row_norm_forward's contract; w/b hold D values (1 / 0 when absent); mean/rstd get R
// statistics.
void forward(const TensorView& out, const TensorView& input, const std::vector<float>& w,
             const std::vector<float>& b, double eps, bool rms, std::vector<double>& mean,
             std::vector<double>& rstd);

// row_norm_backward's contract for grad_input (may be nullptr) and the column sums of
// grad_weight (g * xhat) and grad_bias (g), returned in gw/gb (sized D) when want_columns.
void backward(const TensorView* grad_input, const TensorView& grad_out, const TensorView& input,
              const std::vector<float>& w, const std::vector<float>& mean,
              const std::vector<float>& rstd, bool rms, bool want_columns, std::vector<double>& gw,
              std::vector<double>& gb);

}  // namespace openneuron::kernels::normalization_rows
