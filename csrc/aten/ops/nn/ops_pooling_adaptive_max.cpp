// Adaptive max pooling (AdaptiveMaxPool1d/2d) on the device. PyTorch's meta kernel checks each
// call (the CPU's errors) and gives the result's shape; the backward reuses max pooling's
// scatter to the saved indices.
#include <ATen/native/Resize.h>
#include <ATen/ops/adaptive_max_pool2d.h>
#include <ATen/ops/adaptive_max_pool2d_backward.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/nn/nn_helpers.h"
#include "aten/ops/nn/ops_nn.h"
#include "kernels/nn/adaptive_max_pool.h"
#include "kernels/nn/pooling.h"

namespace openneuron::bridge {

namespace {

at::Tensor meta_like(const at::Tensor& tensor) {
  return at::empty_strided(tensor.sizes(), tensor.strides(),
                           tensor.options().device(c10::DeviceType::Meta));
}

// [C, H, W] as [1, C, H, W].
kernels::TensorView as_4d(const at::Tensor& t) {
  kernels::TensorView view = view_of(t);
  return t.dim() == 3 ? nn::with_unit_dim(view, 0) : view;
}

at::MemoryFormat pooled_format(const at::Tensor& self) {
  return self.dim() == 4 ? self.suggest_memory_format() : at::MemoryFormat::Contiguous;
}

void launch_forward(const at::Tensor& self, const at::Tensor& out, const at::Tensor& indices) {
  if (out.numel() == 0) return;
  const c10::DeviceGuard guard(self.device());
  const kernels::TensorView out_view = as_4d(out), idx_view = as_4d(indices), in_view = as_4d(self);
  stream_for(out).enqueue("aten::adaptive_max_pool2d", [=] {
    kernels::adaptive_max_pool2d_forward(out_view, idx_view, in_view);
  });
}

void launch_backward(const at::Tensor& grad_output, const at::Tensor& indices,
                     const at::Tensor& grad_input) {
  if (grad_input.numel() == 0) return;
  const c10::DeviceGuard guard(grad_input.device());
  const at::Tensor dense_indices = indices.contiguous();
  const kernels::TensorView gi = as_4d(grad_input), go = as_4d(grad_output),
                            idx = as_4d(dense_indices);
  stream_for(grad_input).enqueue("aten::adaptive_max_pool2d_backward", [=] {
    kernels::max_pool2d_backward(gi, go, idx);
  });
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> adaptive_max_pool2d(const at::Tensor& self,
                                                       at::IntArrayRef output_size) {
  const auto shapes = at::adaptive_max_pool2d(meta_like(self), output_size);
  if (!nn::all_nn_dtypes({&self})) {
    return OPENNEURON_FALLBACK(adaptive_max_pool2d, self, output_size);
  }
  OPENNEURON_NATIVE_OP("aten::adaptive_max_pool2d");
  const auto format = pooled_format(self);
  at::Tensor out = at::empty(std::get<0>(shapes).sizes(), self.options().memory_format(format));
  at::Tensor indices =
      at::empty(std::get<1>(shapes).sizes(), self.options().dtype(at::kLong).memory_format(format));
  launch_forward(self, out, indices);
  return {out, indices};
}

std::tuple<at::Tensor&, at::Tensor&> adaptive_max_pool2d_out(const at::Tensor& self,
                                                             at::IntArrayRef output_size,
                                                             at::Tensor& out, at::Tensor& indices) {
  const auto shapes = at::adaptive_max_pool2d(meta_like(self), output_size);
  if (!nn::all_nn_dtypes({&self, &out})) {
    return OPENNEURON_FALLBACK(adaptive_max_pool2d_out, self, output_size, out, indices);
  }
  OPENNEURON_NATIVE_OP("aten::adaptive_max_pool2d.out");
  check_same_device("aten::adaptive_max_pool2d.out", {&self, &out, &indices});
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "Expected out tensor to have dtype ",
              self.scalar_type(), ", but got ", out.scalar_type(), " instead");
  TORCH_CHECK(indices.scalar_type() == at::kLong, "Expected out tensor to have dtype ", at::kLong,
              ", but got ", indices.scalar_type(), " instead");
  at::native::resize_output(out, std::get<0>(shapes).sizes());
  at::native::resize_output(indices, std::get<1>(shapes).sizes());
  launch_forward(self, out, indices);
  return {out, indices};
}

at::Tensor& adaptive_max_pool2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                             const at::Tensor& indices, at::Tensor& grad_input) {
  at::adaptive_max_pool2d_backward(meta_like(grad_output), meta_like(self), meta_like(indices));
  if (!nn::all_nn_dtypes({&grad_output, &self, &grad_input})) {
    return OPENNEURON_FALLBACK(adaptive_max_pool2d_backward_grad_input, grad_output, self, indices,
                               grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::adaptive_max_pool2d_backward.grad_input");
  check_same_device("aten::adaptive_max_pool2d_backward", {&grad_output, &self, &indices});
  TORCH_CHECK(grad_input.scalar_type() == self.scalar_type(), "Expected out tensor to have dtype ",
              self.scalar_type(), ", but got ", grad_input.scalar_type(), " instead");
  at::native::resize_output(grad_input, self.sizes());
  launch_backward(grad_output, indices, grad_input);
  return grad_input;
}

at::Tensor adaptive_max_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                        const at::Tensor& indices) {
  at::adaptive_max_pool2d_backward(meta_like(grad_output), meta_like(self), meta_like(indices));
  if (!nn::all_nn_dtypes({&grad_output, &self})) {
    return OPENNEURON_FALLBACK(adaptive_max_pool2d_backward, grad_output, self, indices);
  }
  OPENNEURON_NATIVE_OP("aten::adaptive_max_pool2d_backward");
  check_same_device("aten::adaptive_max_pool2d_backward", {&grad_output, &self, &indices});
  at::Tensor grad_input =
      at::empty(self.sizes(), self.options().memory_format(pooled_format(self)));
  launch_backward(grad_output, indices, grad_input);
  return grad_input;
}

}  // namespace openneuron::bridge
