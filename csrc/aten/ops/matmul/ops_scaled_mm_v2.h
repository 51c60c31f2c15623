// torch._scaled_mm_v2 (torch.nn.functional.scaled_mm): the scaled products of ops_scaled_mm.cpp
// taken as lists of scales with a recipe and a swizzle each.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace openneuron::bridge {

// Tensor-wise and row-wise recipes run as _scaled_mm; BlockWise1x32 (MX) with SWIZZLE_32_4_4
// scales runs the MX product; other recipes raise NotImplementedError at the call.
at::Tensor scaled_mm_v2(const at::Tensor& mat1, const at::Tensor& mat2, at::TensorList scale_a,
                        at::IntArrayRef recipe_a, at::IntArrayRef swizzle_a, at::TensorList scale_b,
                        at::IntArrayRef recipe_b, at::IntArrayRef swizzle_b,
                        const std::optional<at::Tensor>& bias,
                        std::optional<at::ScalarType> out_dtype, at::IntArrayRef contraction_dim,
                        bool use_fast_accum);

}  // namespace openneuron::bridge
