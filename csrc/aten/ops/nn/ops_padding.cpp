// Reflection and replication padding (1-3 padded dims), forward and backward, on the device.
// PyTorch's meta kernels check each call first: they raise the CPU's errors and give the
// result's shape.
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/reflection_pad1d.h>
#include <ATen/ops/reflection_pad1d_backward.h>
#include <ATen/ops/reflection_pad2d.h>
#include <ATen/ops/reflection_pad2d_backward.h>
#include <ATen/ops/reflection_pad3d.h>
#include <ATen/ops/reflection_pad3d_backward.h>
#include <ATen/ops/replication_pad1d.h>
#include <ATen/ops/replication_pad1d_backward.h>
#include <ATen/ops/replication_pad2d.h>
#include <ATen/ops/replication_pad2d_backward.h>
#include <ATen/ops/replication_pad3d.h>
#include <ATen/ops/replication_pad3d_backward.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/nn/nn_helpers.h"
#include "aten/ops/nn/ops_nn.h"
#include "kernels/nn/padding.h"

namespace openneuron::bridge {

namespace {

using kernels::PadMode;

at::Tensor meta_like(const at::Tensor& tensor) {
  return at::empty_strided(tensor.sizes(), tensor.strides(),
                           tensor.options().device(c10::DeviceType::Meta));
}

// PyTorch lists padding innermost dim first: (left, right, top, bottom, front, back).
kernels::PadAmounts pad_amounts(at::IntArrayRef padding) {
  kernels::PadAmounts amounts;
  amounts.spatial_dims = static_cast<int>(padding.size() / 2);
  for (int k = 0; k < amounts.spatial_dims; ++k) {
    const int dim = amounts.spatial_dims - 1 - k;
    amounts.before[dim] = padding[2 * k];
    amounts.after[dim] = padding[2 * k + 1];
  }
  return amounts;
}

// The CPU's rank check (the meta kernels index out of range, or accept too many dims, first).
void check_input_rank(const at::Tensor& self, int64_t spatial_dims) {
  bool valid = self.dim() == spatial_dims + 1 || self.dim() == spatial_dims + 2;
  for (int64_t d = self.dim() == spatial_dims + 2 ? 1 : 0; valid && d < self.dim(); ++d) {
    valid = self.size(d) != 0;
  }
  TORCH_CHECK(valid, "Expected ", spatial_dims + 1, "D or ", spatial_dims + 2,
              "D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
              "input, but got: ",
              self.sizes());
}

bool forward_is_native(const at::Tensor& self) {
  return is_native_compute_dtype(self.scalar_type()) && !at::isComplexType(self.scalar_type());
}

// Checks an out= tensor as a structured kernel does, then sizes it.
void prepare_out(const char* name, const at::Tensor& self, at::Tensor& out, at::IntArrayRef shape) {
  check_same_device(name, {&self, &out});
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "Expected out tensor to have dtype ",
              self.scalar_type(), ", but got ", out.scalar_type(), " instead");
  at::native::resize_output(out, shape);
}

void launch_forward(const char* name, PadMode mode, const at::Tensor& self, const at::Tensor& out,
                    at::IntArrayRef padding) {
  if (out.numel() == 0) return;
  const c10::DeviceGuard guard(self.device());
  const kernels::TensorView out_view = view_of(out), in_view = view_of(self);
  const kernels::PadAmounts amounts = pad_amounts(padding);
  enqueue_sized(stream_for(out), name, out.numel(),
                [=] { kernels::pad_forward(mode, out_view, in_view, amounts); });
}

void launch_backward(const char* name, PadMode mode, const at::Tensor& grad_output,
                     const at::Tensor& grad_input, at::IntArrayRef padding) {
  if (grad_input.numel() == 0) return;
  const c10::DeviceGuard guard(grad_input.device());
  const kernels::TensorView gi_view = view_of(grad_input), go_view = view_of(grad_output);
  const kernels::PadAmounts amounts = pad_amounts(padding);
  enqueue_sized(stream_for(grad_input), name, grad_output.numel(),
                [=] { kernels::pad_backward(mode, gi_view, go_view, amounts); });
}

}  // namespace

// One family per (mode, dims): the functional and out= forms and their backward.
#define OPENNEURON_PADDING(op, mode, spatial_dims)                                          \
  at::Tensor op(const at::Tensor& self, at::IntArrayRef padding) {                          \
    check_input_rank(self, spatial_dims);                                                   \
    const at::Tensor shape = at::op(meta_like(self), padding);                              \
    if (!forward_is_native(self)) return OPENNEURON_FALLBACK(op, self, padding);            \
    OPENNEURON_NATIVE_OP("aten::" #op);                                                     \
    at::Tensor out = at::empty(shape.sizes(), self.options());                              \
    launch_forward("aten::" #op, mode, self, out, padding);                                 \
    return out;                                                                             \
  }                                                                                         \
  at::Tensor& op##_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out) {  \
    check_input_rank(self, spatial_dims);                                                   \
    const at::Tensor shape = at::op(meta_like(self), padding);                              \
    if (!forward_is_native(self)) return OPENNEURON_FALLBACK(op##_out, self, padding, out); \
    OPENNEURON_NATIVE_OP("aten::" #op ".out");                                              \
    prepare_out("aten::" #op ".out", self, out, shape.sizes());                             \
    launch_forward("aten::" #op, mode, self, out, padding);                                 \
    return out;                                                                             \
  }                                                                                         \
  at::Tensor& op##_backward_out(const at::Tensor& grad_output, const at::Tensor& self,      \
                                at::IntArrayRef padding, at::Tensor& grad_input) {          \
    check_input_rank(self, spatial_dims);                                                   \
    at::op##_backward(meta_like(grad_output), meta_like(self), padding);                    \
    if (!nn::all_nn_dtypes({&grad_output, &self, &grad_input}) ||                           \
        grad_output.scalar_type() != self.scalar_type()) {                                  \
      return OPENNEURON_FALLBACK(op##_backward_grad_input, grad_output, self, padding,      \
                                 grad_input);                                               \
    }                                                                                       \
    OPENNEURON_NATIVE_OP("aten::" #op "_backward.grad_input");                              \
    check_same_device("aten::" #op "_backward", {&grad_output, &self});                     \
    prepare_out("aten::" #op "_backward.grad_input", self, grad_input, self.sizes());       \
    launch_backward("aten::" #op "_backward", mode, grad_output, grad_input, padding);      \
    return grad_input;                                                                      \
  }                                                                                         \
  at::Tensor op##_backward(const at::Tensor& grad_output, const at::Tensor& self,           \
                           at::IntArrayRef padding) {                                       \
    check_input_rank(self, spatial_dims);                                                   \
    at::op##_backward(meta_like(grad_output), meta_like(self), padding);                    \
    if (!nn::all_nn_dtypes({&grad_output, &self}) ||                                        \
        grad_output.scalar_type() != self.scalar_type()) {                                  \
      return OPENNEURON_FALLBACK(op##_backward, grad_output, self, padding);                \
    }                                                                                       \
    OPENNEURON_NATIVE_OP("aten::" #op "_backward");                                         \
    check_same_device("aten::" #op "_backward", {&grad_output, &self});                     \
    at::Tensor grad_input = at::empty(self.sizes(), self.options());                        \
    launch_backward("aten::" #op "_backward", mode, grad_output, grad_input, padding);      \
    return grad_input;                                                                      \
  }

OPENNEURON_PADDING(reflection_pad1d, PadMode::Reflect, 1)
OPENNEURON_PADDING(reflection_pad2d, PadMode::Reflect, 2)
OPENNEURON_PADDING(reflection_pad3d, PadMode::Reflect, 3)
OPENNEURON_PADDING(replication_pad1d, PadMode::Replicate, 1)
OPENNEURON_PADDING(replication_pad2d, PadMode::Replicate, 2)
OPENNEURON_PADDING(replication_pad3d, PadMode::Replicate, 3)

#undef OPENNEURON_PADDING

}  // namespace openneuron::bridge
