// grid_sampler_2d at 16 bits. PyTorch's CPU kernel computes each sampled element's offset
// (y * stride + x) in the 16-bit type, which holds integers exactly only up to 2048 (float16)
// or 256 (bfloat16): on larger images it reads and writes the wrong elements, and beyond the
// type's range outside its tensors (heap corruption; the process aborts). The host fallback
// would run that kernel, so 16-bit calls widen to float32 on the device, run the float32 host
// kernel and round each result once. Other dtypes take the host fallback unchanged.
#include <ATen/ops/grid_sampler_2d.h>
#include <ATen/ops/grid_sampler_2d_backward.h>
#include <torch/library.h>

#include <array>
#include <tuple>

#include "aten/fallback/fallback.h"

namespace openneuron::bridge {

namespace {

bool is_16bit(const at::Tensor& t) {
  return t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16;
}

// True when the call is one the float32 route serves: a 16-bit input and grid of one dtype
// (mixed dtypes go to the host, which raises the CPU's error).
bool widen_to_float32(const at::Tensor& input, const at::Tensor& grid) {
  return is_16bit(input) && grid.scalar_type() == input.scalar_type();
}

at::Tensor narrowed(const at::Tensor& result, at::ScalarType dtype) {
  return result.defined() ? result.to(dtype) : result;
}

at::Tensor grid_sampler_2d(const at::Tensor& input, const at::Tensor& grid,
                           int64_t interpolation_mode, int64_t padding_mode, bool align_corners) {
  if (!widen_to_float32(input, grid)) {
    return OPENNEURON_FALLBACK(grid_sampler_2d, input, grid, interpolation_mode, padding_mode,
                               align_corners);
  }
  at::Tensor output =
      OPENNEURON_FALLBACK(grid_sampler_2d, input.to(at::kFloat), grid.to(at::kFloat),
                          interpolation_mode, padding_mode, align_corners);
  return output.to(input.scalar_type());
}

std::tuple<at::Tensor, at::Tensor> grid_sampler_2d_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& grid,
    int64_t interpolation_mode, int64_t padding_mode, bool align_corners,
    std::array<bool, 2> output_mask) {
  if (!widen_to_float32(input, grid) || grad_output.scalar_type() != input.scalar_type()) {
    return OPENNEURON_FALLBACK(grid_sampler_2d_backward, grad_output, input, grid,
                               interpolation_mode, padding_mode, align_corners, output_mask);
  }
  auto [grad_input, grad_grid] = OPENNEURON_FALLBACK(
      grid_sampler_2d_backward, grad_output.to(at::kFloat), input.to(at::kFloat),
      grid.to(at::kFloat), interpolation_mode, padding_mode, align_corners, output_mask);
  return {narrowed(grad_input, input.scalar_type()), narrowed(grad_grid, grid.scalar_type())};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("grid_sampler_2d", TORCH_FN(grid_sampler_2d));
  m.impl("grid_sampler_2d_backward", TORCH_FN(grid_sampler_2d_backward));
}

}  // namespace openneuron::bridge
