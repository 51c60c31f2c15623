// multilabel_margin_loss on the device at float32/bfloat16/float16 (the 16-bit ones are CUDA's),
// forward and backward, with the CPU's shape, dtype and target-range checks at the call.
#include <ATen/TensorUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <tuple>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/nn/nn_helpers.h"
#include "aten/ops/shape/index_bounds.h"
#include "kernels/nn/multilabel_margin_loss.h"

namespace openneuron::bridge {
namespace {

bool loss_is_native(std::initializer_list<const at::Tensor*> tensors) {
  const at::ScalarType type = (*tensors.begin())->scalar_type();
  if (type != at::kFloat && type != at::kBFloat16 && type != at::kHalf) return false;
  for (const at::Tensor* t : tensors) {
    if (t->scalar_type() != type) return false;
  }
  return true;
}

// As the CPU reads it: 0 none, 1 mean, any other value sum.
kernels::LossReduction reduction_of(int64_t reduction) {
  if (reduction == 0) return kernels::LossReduction::None;
  return reduction == 1 ? kernels::LossReduction::Mean : kernels::LossReduction::Sum;
}

struct LossShape {
  int64_t rows, classes;
};

// The CPU's checks of input and target; the shape as [rows, classes].
LossShape check_loss(const at::Tensor& self, const at::Tensor& target) {
  const int64_t dims = self.dim();
  TORCH_CHECK((dims <= 1 && self.numel() > 0) || (dims == 2 && self.size(1) > 0),
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ",
              self.sizes());
  const int64_t rows = dims <= 1 ? 1 : self.size(0);
  const int64_t classes = dims == 0 ? 1 : self.size(dims - 1);
  const bool consistent =
      dims <= 1 ? target.dim() <= 1 && target.numel() == classes
                : target.dim() == 2 && target.size(0) == rows && target.size(1) == classes;
  TORCH_CHECK(consistent, "inconsistent target size: ", target.sizes(),
              " for input of size: ", self.sizes());
  TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ",
              target.scalar_type());
  TORCH_CHECK(!first_index_outside(target, -1, classes).has_value(),
              "argument #2 'target' is out of range");
  return {rows, classes};
}

void launch_forward(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                    const LossShape& shape, at::Tensor& output, at::Tensor& is_target) {
  const kernels::TensorView x = view_of(self.reshape({shape.rows, shape.classes}));
  const kernels::TensorView t = view_of(target.reshape({shape.rows, shape.classes}));
  const kernels::TensorView flags = view_of(is_target.view({shape.rows, shape.classes}));
  const kernels::TensorView o = view_of(output.view({output.numel()}));
  const kernels::LossReduction red = reduction_of(reduction);
  stream_for(output).enqueue("aten::multilabel_margin_loss_forward",
                             [=] { kernels::multilabel_margin_loss_forward(o, flags, x, t, red); });
}

std::tuple<at::Tensor&, at::Tensor&> forward_out(const at::Tensor& self, const at::Tensor& target,
                                                 int64_t reduction, at::Tensor& output,
                                                 at::Tensor& is_target) {
  if (!loss_is_native({&self, &output, &is_target})) {
    return OPENNEURON_FALLBACK(multilabel_margin_loss_forward_output, self, target, reduction,
                               output, is_target);
  }
  OPENNEURON_NATIVE_OP("aten::multilabel_margin_loss_forward.output");
  const c10::DeviceGuard guard(
      check_same_device("multilabel_margin_loss_forward", {&self, &target, &output, &is_target}));
  const LossShape shape = check_loss(self, target);
  const bool per_row = reduction == 0 && self.dim() == 2;
  at::native::resize_output(output, per_row ? at::IntArrayRef{shape.rows} : at::IntArrayRef{});
  at::native::resize_output(is_target, self.sizes());
  // The kernel writes dense results; out= tensors of other strides are filled through a copy.
  at::Tensor dense_out = output.is_contiguous() ? output : at::empty_like(output);
  at::Tensor dense_flags = is_target.is_contiguous() ? is_target : at::empty_like(is_target);
  launch_forward(self, target, reduction, shape, dense_out, dense_flags);
  if (!dense_out.is_same(output)) output.copy_(dense_out);
  if (!dense_flags.is_same(is_target)) is_target.copy_(dense_flags);
  return {output, is_target};
}

std::tuple<at::Tensor, at::Tensor> forward(const at::Tensor& self, const at::Tensor& target,
                                           int64_t reduction) {
  if (!loss_is_native({&self})) {
    return OPENNEURON_FALLBACK(multilabel_margin_loss_forward, self, target, reduction);
  }
  const c10::DeviceGuard guard(self.device());
  at::Tensor output = at::empty({0}, self.options());
  at::Tensor is_target = at::empty({0}, self.options());
  forward_out(self, target, reduction, output, is_target);
  return {output, is_target};
}

at::Tensor& backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                         const at::Tensor& target, int64_t reduction, const at::Tensor& is_target,
                         at::Tensor& grad_input) {
  if (!loss_is_native({&self, &grad_output, &is_target, &grad_input})) {
    return OPENNEURON_FALLBACK(multilabel_margin_loss_backward_grad_input, grad_output, self,
                               target, reduction, is_target, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::multilabel_margin_loss_backward.grad_input");
  const c10::DeviceGuard guard(check_same_device(
      "multilabel_margin_loss_backward", {&grad_output, &self, &target, &is_target, &grad_input}));
  const LossShape shape = check_loss(self, target);
  const at::TensorArg target_arg{target, "target", 3}, is_target_arg{is_target, "is_target", 5};
  at::checkSameSize("multilabel_margin_loss_backward_cpu_template", target_arg, is_target_arg);
  if (reduction == 0 && self.dim() == 2) {
    TORCH_CHECK(grad_output.dim() == 1 && grad_output.size(0) == shape.rows,
                "Expected a tensor of dimension 1 and tensor.size[0] == ", shape.rows,
                " but got: dimension ", grad_output.dim(), " and tensor.size[0] = ",
                grad_output.dim() == 1 ? grad_output.size(0) : grad_output.numel());
  } else {
    TORCH_CHECK(grad_output.numel() == 1,
                "Expected a single element grad_output tensor, but got: ", grad_output.sizes());
  }
  at::native::resize_output(grad_input, self.sizes());
  if (grad_input.numel() == 0) return grad_input;
  at::Tensor dense = grad_input.is_contiguous() ? grad_input : at::empty_like(grad_input);
  const kernels::TensorView gi = view_of(dense.view({shape.rows, shape.classes}));
  const kernels::TensorView go = view_of(grad_output.reshape({grad_output.numel()}));
  const kernels::TensorView x = view_of(self.reshape({shape.rows, shape.classes}));
  const kernels::TensorView t = view_of(target.reshape({shape.rows, shape.classes}));
  const kernels::TensorView flags = view_of(is_target.reshape({shape.rows, shape.classes}));
  const kernels::LossReduction red = reduction_of(reduction);
  stream_for(dense).enqueue("aten::multilabel_margin_loss_backward", [=] {
    kernels::multilabel_margin_loss_backward(gi, go, x, t, flags, red);
  });
  if (!dense.is_same(grad_input)) grad_input.copy_(dense);
  return grad_input;
}

at::Tensor backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                    int64_t reduction, const at::Tensor& is_target) {
  if (!loss_is_native({&self, &grad_output, &is_target})) {
    return OPENNEURON_FALLBACK(multilabel_margin_loss_backward, grad_output, self, target,
                               reduction, is_target);
  }
  const c10::DeviceGuard guard(self.device());
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  return backward_out(grad_output, self, target, reduction, is_target, grad_input);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("multilabel_margin_loss_forward", TORCH_FN(forward));
  m.impl("multilabel_margin_loss_forward.output", TORCH_FN(forward_out));
  m.impl("multilabel_margin_loss_backward", TORCH_FN(backward));
  m.impl("multilabel_margin_loss_backward.grad_input", TORCH_FN(backward_out));
}

}  // namespace openneuron::bridge
