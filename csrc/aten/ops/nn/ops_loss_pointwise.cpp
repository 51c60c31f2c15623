// Elementwise losses on the device: huber_loss, smooth_l1_loss and binary_cross_entropy,
// forward and backward, at fp32/bf16/fp16 (16-bit computed in fp32, rounded once). Operands of
// other or mixed dtypes go to the host, whose kernels raise the CPU's errors.
#include "aten/ops/nn/ops_loss_pointwise.h"

#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/all.h>
#include <ATen/ops/binary_cross_entropy.h>
#include <ATen/ops/binary_cross_entropy_backward.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ge.h>
#include <ATen/ops/huber_loss.h>
#include <ATen/ops/huber_loss_backward.h>
#include <ATen/ops/le.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/smooth_l1_loss.h>
#include <ATen/ops/smooth_l1_loss_backward.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/nn/nn_helpers.h"
#include "kernels/nn/pointwise_loss.h"

namespace openneuron::bridge {

namespace {

using kernels::PointwiseLoss;
using nn::opt;

// Native when every operand is one fp32/bf16/fp16 dtype.
bool loss_is_native(std::initializer_list<const at::Tensor*> tensors) {
  if (!nn::all_nn_dtypes(tensors)) return false;
  const at::Tensor* first = nullptr;
  for (const at::Tensor* t : tensors) {
    if (t == nullptr || !t->defined()) continue;
    if (t->scalar_type() == at::kDouble) return false;
    if (first == nullptr) first = t;
    if (t->scalar_type() != first->scalar_type()) return false;
  }
  return true;
}

void check_param(PointwiseLoss loss, double param) {
  if (loss == PointwiseLoss::Huber) {
    TORCH_CHECK(param > 0, "huber_loss does not support non-positive values for delta.");
  } else if (loss == PointwiseLoss::SmoothL1) {
    TORCH_CHECK(param >= 0, "smooth_l1_loss does not support negative values for beta.");
  }
}

std::vector<int64_t> loss_shape(PointwiseLoss loss, const at::Tensor& self,
                                const at::Tensor& target) {
  if (loss != PointwiseLoss::BinaryCrossEntropy) {
    return at::infer_size(self.sizes(), target.sizes());
  }
  TORCH_CHECK(self.sizes() == target.sizes(), "Using a target size (", target.sizes(),
              ") that is different to the input size (", self.sizes(), ") is deprecated. ",
              "Please ensure they have the same size.");
  return self.sizes().vec();
}

// BCE's CPU kernel refuses inputs outside [0, 1]; checked here, at the call.
void check_probabilities(const at::Tensor& self) {
  if (self.numel() == 0) return;
  const bool inside = at::all(at::logical_and(at::ge(self, 0), at::le(self, 1))).item<bool>();
  TORCH_CHECK(inside, "all elements of input should be between 0 and 1");
}

at::Tensor forward(const char* name, PointwiseLoss loss, const at::Tensor& self,
                   const at::Tensor& target, const at::Tensor* weight, int64_t reduction,
                   double param) {
  const c10::Device device = nn::check_device(name, {&self, &target, weight});
  check_param(loss, param);
  const c10::DeviceGuard guard(device);
  const std::vector<int64_t> shape = loss_shape(loss, self, target);
  if (loss == PointwiseLoss::BinaryCrossEntropy) check_probabilities(self);
  at::Tensor out =
      reduction == 0 ? at::empty(shape, self.options()) : at::empty({}, self.options());
  if (reduction == 0 && out.numel() == 0) return out;
  const kernels::TensorView x = broadcast_view(self, shape);
  const kernels::TensorView y = broadcast_view(target, shape);
  const bool has_weight = weight != nullptr;
  const kernels::TensorView w = has_weight ? broadcast_view(*weight, shape) : kernels::TensorView{};
  const kernels::TensorView o = view_of(out);
  const auto red = static_cast<kernels::LossReduction>(reduction);
  stream_for(out).enqueue(name, [=] {
    kernels::pointwise_loss_forward(o, x, y, has_weight ? &w : nullptr, loss, red, param);
  });
  return out;
}

at::Tensor backward(const char* name, PointwiseLoss loss, const at::Tensor& grad_output,
                    const at::Tensor& self, const at::Tensor& target, const at::Tensor* weight,
                    int64_t reduction, double param) {
  const c10::Device device = nn::check_device(name, {&grad_output, &self, &target, weight});
  check_param(loss, param);
  const c10::DeviceGuard guard(device);
  const std::vector<int64_t> shape = loss_shape(loss, self, target);
  at::Tensor grad_input = at::empty(shape, self.options());
  if (grad_input.numel() == 0) return grad_input;
  const kernels::TensorView gi = view_of(grad_input);
  const kernels::TensorView go = broadcast_view(grad_output, shape);
  const kernels::TensorView x = broadcast_view(self, shape);
  const kernels::TensorView y = broadcast_view(target, shape);
  const bool has_weight = weight != nullptr;
  const kernels::TensorView w = has_weight ? broadcast_view(*weight, shape) : kernels::TensorView{};
  const auto red = static_cast<kernels::LossReduction>(reduction);
  stream_for(grad_input).enqueue(name, [=] {
    kernels::pointwise_loss_backward(gi, go, x, y, has_weight ? &w : nullptr, loss, red, param);
  });
  return grad_input;
}

}  // namespace

at::Tensor huber_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                      double delta) {
  if (!loss_is_native({&self, &target})) {
    return OPENNEURON_FALLBACK(huber_loss, self, target, reduction, delta);
  }
  OPENNEURON_NATIVE_OP("aten::huber_loss");
  return forward("aten::huber_loss", PointwiseLoss::Huber, self, target, nullptr, reduction, delta);
}

at::Tensor& huber_loss_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                           double delta, at::Tensor& out) {
  if (!loss_is_native({&self, &target, &out})) {
    return OPENNEURON_FALLBACK(huber_loss_out, self, target, reduction, delta, out);
  }
  OPENNEURON_NATIVE_OP("aten::huber_loss.out");
  return assign_out(out, forward("aten::huber_loss", PointwiseLoss::Huber, self, target, nullptr,
                                 reduction, delta));
}

at::Tensor huber_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                               const at::Tensor& target, int64_t reduction, double delta) {
  if (!loss_is_native({&grad_output, &self, &target})) {
    return OPENNEURON_FALLBACK(huber_loss_backward, grad_output, self, target, reduction, delta);
  }
  OPENNEURON_NATIVE_OP("aten::huber_loss_backward");
  return backward("aten::huber_loss_backward", PointwiseLoss::Huber, grad_output, self, target,
                  nullptr, reduction, delta);
}

at::Tensor& huber_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    const at::Tensor& target, int64_t reduction, double delta,
                                    at::Tensor& grad_input) {
  if (!loss_is_native({&grad_output, &self, &target, &grad_input})) {
    return OPENNEURON_FALLBACK(huber_loss_backward_out, grad_output, self, target, reduction, delta,
                               grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::huber_loss_backward.out");
  return assign_out(grad_input, backward("aten::huber_loss_backward", PointwiseLoss::Huber,
                                         grad_output, self, target, nullptr, reduction, delta));
}

at::Tensor smooth_l1_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                          double beta) {
  if (!loss_is_native({&self, &target})) {
    return OPENNEURON_FALLBACK(smooth_l1_loss, self, target, reduction, beta);
  }
  OPENNEURON_NATIVE_OP("aten::smooth_l1_loss");
  return forward("aten::smooth_l1_loss", PointwiseLoss::SmoothL1, self, target, nullptr, reduction,
                 beta);
}

at::Tensor& smooth_l1_loss_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                               double beta, at::Tensor& out) {
  if (!loss_is_native({&self, &target, &out})) {
    return OPENNEURON_FALLBACK(smooth_l1_loss_out, self, target, reduction, beta, out);
  }
  OPENNEURON_NATIVE_OP("aten::smooth_l1_loss.out");
  return assign_out(out, forward("aten::smooth_l1_loss", PointwiseLoss::SmoothL1, self, target,
                                 nullptr, reduction, beta));
}

at::Tensor smooth_l1_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                   const at::Tensor& target, int64_t reduction, double beta) {
  if (!loss_is_native({&grad_output, &self, &target})) {
    return OPENNEURON_FALLBACK(smooth_l1_loss_backward, grad_output, self, target, reduction, beta);
  }
  OPENNEURON_NATIVE_OP("aten::smooth_l1_loss_backward");
  return backward("aten::smooth_l1_loss_backward", PointwiseLoss::SmoothL1, grad_output, self,
                  target, nullptr, reduction, beta);
}

at::Tensor& smooth_l1_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                        const at::Tensor& target, int64_t reduction, double beta,
                                        at::Tensor& grad_input) {
  if (!loss_is_native({&grad_output, &self, &target, &grad_input})) {
    return OPENNEURON_FALLBACK(smooth_l1_loss_backward_grad_input, grad_output, self, target,
                               reduction, beta, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::smooth_l1_loss_backward.grad_input");
  return assign_out(grad_input, backward("aten::smooth_l1_loss_backward", PointwiseLoss::SmoothL1,
                                         grad_output, self, target, nullptr, reduction, beta));
}

at::Tensor binary_cross_entropy(const at::Tensor& self, const at::Tensor& target,
                                const std::optional<at::Tensor>& weight, int64_t reduction) {
  if (!loss_is_native({&self, &target, opt(weight)})) {
    return OPENNEURON_FALLBACK(binary_cross_entropy, self, target, weight, reduction);
  }
  OPENNEURON_NATIVE_OP("aten::binary_cross_entropy");
  return forward("aten::binary_cross_entropy", PointwiseLoss::BinaryCrossEntropy, self, target,
                 opt(weight), reduction, 0.0);
}

at::Tensor& binary_cross_entropy_out(const at::Tensor& self, const at::Tensor& target,
                                     const std::optional<at::Tensor>& weight, int64_t reduction,
                                     at::Tensor& out) {
  if (!loss_is_native({&self, &target, opt(weight), &out})) {
    return OPENNEURON_FALLBACK(binary_cross_entropy_out, self, target, weight, reduction, out);
  }
  OPENNEURON_NATIVE_OP("aten::binary_cross_entropy.out");
  return assign_out(out, forward("aten::binary_cross_entropy", PointwiseLoss::BinaryCrossEntropy,
                                 self, target, opt(weight), reduction, 0.0));
}

at::Tensor binary_cross_entropy_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                         const at::Tensor& target,
                                         const std::optional<at::Tensor>& weight,
                                         int64_t reduction) {
  if (!loss_is_native({&grad_output, &self, &target, opt(weight)})) {
    return OPENNEURON_FALLBACK(binary_cross_entropy_backward, grad_output, self, target, weight,
                               reduction);
  }
  OPENNEURON_NATIVE_OP("aten::binary_cross_entropy_backward");
  return backward("aten::binary_cross_entropy_backward", PointwiseLoss::BinaryCrossEntropy,
                  grad_output, self, target, opt(weight), reduction, 0.0);
}

at::Tensor& binary_cross_entropy_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                              const at::Tensor& target,
                                              const std::optional<at::Tensor>& weight,
                                              int64_t reduction, at::Tensor& grad_input) {
  if (!loss_is_native({&grad_output, &self, &target, opt(weight), &grad_input})) {
    return OPENNEURON_FALLBACK(binary_cross_entropy_backward_grad_input, grad_output, self, target,
                               weight, reduction, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::binary_cross_entropy_backward.grad_input");
  return assign_out(
      grad_input, backward("aten::binary_cross_entropy_backward", PointwiseLoss::BinaryCrossEntropy,
                           grad_output, self, target, opt(weight), reduction, 0.0));
}

}  // namespace openneuron::bridge
