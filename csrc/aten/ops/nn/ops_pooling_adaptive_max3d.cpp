// Adaptive 3-D max pooling (AdaptiveMaxPool3d) on the device. PyTorch's meta kernel checks each
// call (the CPU's errors, at the call) and gives the result's shape; the backward reuses 3-D max
// pooling's scatter to the saved indices. Results are contiguous, as the CPU's are.
#include <ATen/native/Resize.h>
#include <ATen/ops/adaptive_max_pool3d.h>
#include <ATen/ops/adaptive_max_pool3d_backward.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <tuple>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/nn/nn_helpers.h"
#include "kernels/nn/adaptive_max_pool3d.h"
#include "kernels/nn/pool3d.h"

namespace openneuron::bridge {
namespace {

at::Tensor meta_like(const at::Tensor& tensor) {
  return at::empty_strided(tensor.sizes(), tensor.strides(),
                           tensor.options().device(c10::DeviceType::Meta));
}

// [C, D, H, W] as [1, C, D, H, W].
kernels::TensorView as_5d(const at::Tensor& t) {
  const kernels::TensorView view = view_of(t);
  return t.dim() == 4 ? nn::with_unit_dim(view, 0) : view;
}

// The CPU kernel's input checks, with its messages (the meta kernel words them otherwise).
void check_input(const at::Tensor& self) {
  const int64_t dims = self.dim();
  TORCH_CHECK(dims == 4 || dims == 5,
              "adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: ", self.sizes());
  for (int64_t d = 1; d < dims; ++d) {
    TORCH_CHECK(self.size(d) > 0,
                "adaptive_max_pool3d(): Expected input to have non-zero size for non-batch "
                "dimensions, but input has sizes ",
                self.sizes(), " with dimension ", d, " being empty");
  }
}

void launch_forward(const at::Tensor& self, const at::Tensor& out, const at::Tensor& indices) {
  if (out.numel() == 0) return;
  const kernels::TensorView out_view = as_5d(out), idx_view = as_5d(indices), in_view = as_5d(self);
  stream_for(out).enqueue("aten::adaptive_max_pool3d", [=] {
    kernels::adaptive_max_pool3d_forward(out_view, idx_view, in_view);
  });
}

void launch_backward(const at::Tensor& grad_output, const at::Tensor& indices,
                     const at::Tensor& grad_input) {
  if (grad_input.numel() == 0) return;
  const at::Tensor dense_indices = indices.contiguous();
  const kernels::TensorView gi = as_5d(grad_input), go = as_5d(grad_output),
                            idx = as_5d(dense_indices);
  stream_for(grad_input).enqueue("aten::adaptive_max_pool3d_backward", [=] {
    kernels::max_pool3d_backward(gi, go, idx);
  });
}

std::tuple<at::Tensor&, at::Tensor&> adaptive_max_pool3d_out(const at::Tensor& self,
                                                             at::IntArrayRef output_size,
                                                             at::Tensor& out, at::Tensor& indices) {
  check_input(self);
  const auto shapes = at::adaptive_max_pool3d(meta_like(self), output_size);
  if (!nn::all_nn_dtypes({&self, &out})) {
    return OPENNEURON_FALLBACK(adaptive_max_pool3d_out, self, output_size, out, indices);
  }
  OPENNEURON_NATIVE_OP("aten::adaptive_max_pool3d.out");
  const c10::DeviceGuard guard(
      check_same_device("aten::adaptive_max_pool3d.out", {&self, &out, &indices}));
  TORCH_CHECK(out.dtype() == self.dtype(), "Expected out tensor to have dtype ", self.dtype(),
              ", but got ", out.dtype(), " instead");
  TORCH_CHECK(indices.scalar_type() == at::kLong, "Expected out tensor to have dtype long int",
              ", but got ", indices.dtype(), " instead");
  at::native::resize_output(out, std::get<0>(shapes).sizes());
  at::native::resize_output(indices, std::get<1>(shapes).sizes());
  launch_forward(self, out, indices);
  return {out, indices};
}

std::tuple<at::Tensor, at::Tensor> adaptive_max_pool3d(const at::Tensor& self,
                                                       at::IntArrayRef output_size) {
  if (!nn::all_nn_dtypes({&self})) {
    return OPENNEURON_FALLBACK(adaptive_max_pool3d, self, output_size);
  }
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = at::empty({0}, self.options());
  at::Tensor indices = at::empty({0}, self.options().dtype(at::kLong));
  adaptive_max_pool3d_out(self, output_size, out, indices);
  return {out, indices};
}

at::Tensor& adaptive_max_pool3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                             const at::Tensor& indices, at::Tensor& grad_input) {
  (void)at::adaptive_max_pool3d_backward(meta_like(grad_output), meta_like(self),
                                         meta_like(indices));
  if (!nn::all_nn_dtypes({&grad_output, &self, &grad_input})) {
    return OPENNEURON_FALLBACK(adaptive_max_pool3d_backward_grad_input, grad_output, self, indices,
                               grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::adaptive_max_pool3d_backward.grad_input");
  const c10::DeviceGuard guard(check_same_device("aten::adaptive_max_pool3d_backward",
                                                 {&grad_output, &self, &indices, &grad_input}));
  TORCH_CHECK(grad_input.dtype() == self.dtype(), "Expected out tensor to have dtype ",
              self.dtype(), ", but got ", grad_input.dtype(), " instead");
  at::native::resize_output(grad_input, self.sizes());
  launch_backward(grad_output, indices, grad_input);
  return grad_input;
}

at::Tensor adaptive_max_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                        const at::Tensor& indices) {
  if (!nn::all_nn_dtypes({&grad_output, &self})) {
    return OPENNEURON_FALLBACK(adaptive_max_pool3d_backward, grad_output, self, indices);
  }
  const c10::DeviceGuard guard(self.device());
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  return adaptive_max_pool3d_backward_out(grad_output, self, indices, grad_input);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("adaptive_max_pool3d", TORCH_FN(adaptive_max_pool3d));
  m.impl("adaptive_max_pool3d.out", TORCH_FN(adaptive_max_pool3d_out));
  m.impl("adaptive_max_pool3d_backward", TORCH_FN(adaptive_max_pool3d_backward));
  m.impl("adaptive_max_pool3d_backward.grad_input", TORCH_FN(adaptive_max_pool3d_backward_out));
}

}  // namespace openneuron::bridge
