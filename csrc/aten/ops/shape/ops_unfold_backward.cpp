// The gradient of Tensor.unfold(dim, size, step) on the device: each of the `size` offsets in
// a window adds its slice of the gradient into every step-th position of a zero tensor, so
// overlapping windows (size > step) sum, and positions no window covers stay zero.
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/unfold_backward_ops.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"

namespace openneuron::bridge {
namespace {

at::Tensor unfold_backward(const at::Tensor& grad_in, at::IntArrayRef input_sizes, int64_t dim,
                           int64_t size, int64_t step) {
  if (!is_native_compute_dtype(grad_in.scalar_type()) || !grad_in.is_privateuseone()) {
    return OPENNEURON_FALLBACK(unfold_backward, grad_in, input_sizes, dim, size, step);
  }
  OPENNEURON_NATIVE_OP("aten::unfold_backward");
  const c10::DeviceGuard guard(grad_in.device());
  const std::vector<int64_t> sizes = input_sizes.vec();
  at::Tensor grad = at::zeros(sizes, grad_in.options());
  const int64_t wrapped = at::maybe_wrap_dim(dim, static_cast<int64_t>(sizes.size()),
                                             /*wrap_scalar=*/true);
  if (grad.dim() == 0) {  // unfold of a 0-dim tensor: one window of the one element
    return grad_in.reshape({}).clone();
  }
  const int64_t windows = grad_in.size(wrapped);
  if (windows == 0 || grad_in.numel() == 0) return grad;
  // Offsets from the last down: each position then receives its windows in ascending order,
  // the order (and, for 16-bit dtypes, the rounding after each add) of the CPU's kernel.
  for (int64_t offset = size - 1; offset >= 0; --offset) {
    grad.narrow(wrapped, offset, (windows - 1) * step + 1)
        .slice(wrapped, 0, c10::nullopt, step)
        .add_(grad_in.select(-1, offset));
  }
  return grad;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("unfold_backward", TORCH_FN(unfold_backward)); }

}  // namespace openneuron::bridge
