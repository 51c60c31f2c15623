// Resampling of [N, C, *spatial] views with 1 to 3 spatial dims (upsample_* in PyTorch):
// nearest (PyTorch's legacy rule and the "exact" half-pixel rule), linear (1-D, bilinear,
// trilinear) and cubic (2-D), with backward. Each spatial axis gets a table of taps (source
// index and weight per output index) computed with PyTorch's CPU formulas in fp32; 16-bit
// views are computed in fp32 and rounded once on store.
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

enum class InterpolateMode {
  Nearest,       // source = floor(o * in / out) (PyTorch's "nearest", OpenCV's rule)
  NearestExact,  // source = floor((o + 0.5) * in / out) ("nearest-exact")
  Linear,        // 2 taps per axis, clamped at the borders
  Cubic,         // 4 taps per axis (Keys, A = -0.75), indices clamped to the border
};

struct InterpolateParams {
  InterpolateMode mode = InterpolateMode::Nearest;
  bool align_corners = false;  // Linear and Cubic only
  // Per spatial axis (in order), the caller's scale factor (output / input); a value <= 0
  // means none was given and the ratio of the sizes is used, as PyTorch does.
  double scales[3] = {0.0, 0.0, 0.0};
};

// out[N, C, *O] resampled from input[N, C, *I] (same N, C and spatial rank, 1 to 3 spatial
// dims; any strides). Throws std::invalid_argument on mismatched views.
void interpolate_forward(const TensorView& out, const TensorView& input,
                         const InterpolateParams& params);

// grad_input[N, C, *I] = the adjoint of interpolate_forward applied to grad_out[N, C, *O]:
// every output's gradient scattered onto its taps. Deterministic: each (n, c) plane is
// accumulated by one thread in output order; planes run in parallel.
void interpolate_backward(const TensorView& grad_input, const TensorView& grad_out,
                          const InterpolateParams& params);

}  // namespace openneuron::kernels
