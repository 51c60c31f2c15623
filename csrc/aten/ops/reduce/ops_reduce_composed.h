// Reductions the device composes from its native ops: nansum (and so nanmean), count_nonzero
// over dims, and aminmax. Other dtypes (float64, complex) run on the host fallback.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <tuple>

namespace openneuron::bridge {

// sum with NaN counted as zero; integers and bool sum as sum does.
at::Tensor nansum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                  std::optional<at::ScalarType> dtype);
at::Tensor& nansum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                       std::optional<at::ScalarType> dtype, at::Tensor& out);

// The number of nonzero elements along dims (all of them when empty), as int64.
at::Tensor count_nonzero_dims(const at::Tensor& self, at::IntArrayRef dims);

// (amin, amax) along dim, or over all elements; refuses empty reductions as the CPU does.
std::tuple<at::Tensor, at::Tensor> aminmax(const at::Tensor& self, std::optional<int64_t> dim,
                                           bool keepdim);
std::tuple<at::Tensor&, at::Tensor&> aminmax_out(const at::Tensor& self, std::optional<int64_t> dim,
                                                 bool keepdim, at::Tensor& min, at::Tensor& max);

}  // namespace openneuron::bridge
