// Histograms: equal-width bins (torch.histc) and counts of integers (torch.bincount).
#pragma once

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// out (1-D, `bins` elements, in's dtype) = how many elements of `in` fall in each of `bins`
// equal-width bins over [min, max], counted as torch.histc counts: elements outside the range
// and NaNs are not counted, an element equal to the upper end counts in the last bin. Floating
// inputs are placed as PyTorch's CPU kernel places them: by linear interpolation between the
// first and last of `edges` (bins + 1 values of in's dtype, linspace(min, max)), every step
// rounded to in's dtype, truncated. Integer inputs use exact integer arithmetic,
// floor((v - min) * bins / (max - min)) with min and max truncated to integers, as CUDA's
// kernel does (edges unused). Counts are exact up to 2^63 and rounded once into out's dtype.
// in is any strided view; out must not alias it.
void histc(const TensorView& out, const TensorView& in, const TensorView* edges, double min,
           double max);

// out (1-D, int64 counts, or float32 sums of `weights` when given) [v] += 1 (or weights[i]) for
// every element v = in[i] of a 1-D integer view; out must be zeroed and longer than in's
// largest value, which must not be negative (the caller checks both). Float sums add in
// element order, as PyTorch's CPU kernel adds them.
void bincount(const TensorView& out, const TensorView& in, const TensorView* weights);

// The smallest and largest element of a non-empty `in` (NaN if any element is NaN), as doubles.
void min_max(const TensorView& in, double* min, double* max);

}  // namespace openneuron::kernels
