// multi_margin_loss on the device at fp32/bf16/fp16 (computed in fp32, rounded once), forward
// and backward, with the CPU's shape, p and target-range checks at the call.
#include "aten/ops/nn/ops_loss_margin.h"

#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/multi_margin_loss.h>
#include <ATen/ops/multi_margin_loss_backward.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/nn/nn_helpers.h"
#include "aten/ops/shape/index_bounds.h"
#include "kernels/nn/margin_loss.h"

namespace openneuron::bridge {

namespace {

using nn::opt;

bool margin_is_native(std::initializer_list<const at::Tensor*> tensors) {
  const at::Tensor* first = nullptr;
  for (const at::Tensor* t : tensors) {
    if (t == nullptr || !t->defined()) continue;
    const at::ScalarType type = t->scalar_type();
    if (type != at::kFloat && type != at::kBFloat16 && type != at::kHalf) return false;
    if (first == nullptr) first = t;
    if (type != first->scalar_type()) return false;
  }
  return true;
}

struct MarginShape {
  int64_t rows, classes;
};

MarginShape check_margin(const at::Tensor& self, const at::Tensor& target, const at::Tensor* weight,
                         const at::Scalar& p) {
  TORCH_CHECK(p.toLong() == 1 || p.toLong() == 2, "only p == 1 and p == 2 supported");
  const int64_t dims = self.dim();
  TORCH_CHECK((dims == 2 && self.size(1) != 0) || (dims == 1 && self.size(0) != 0) || dims == 0,
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ",
              self.sizes());
  const int64_t rows = dims <= 1 ? 1 : self.size(0);
  const int64_t classes = dims == 0 ? 1 : self.size(dims - 1);
  TORCH_CHECK(target.dim() <= 1 && target.numel() == rows, "inconsistent target size, expected ",
              rows, " but got ", target.sizes());
  TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ",
              target.scalar_type());
  TORCH_CHECK(weight == nullptr || (weight->dim() <= 1 && weight->numel() == classes),
              "inconsistent weight size, expected ", classes, " but got ",
              weight != nullptr ? weight->sizes() : at::IntArrayRef{});
  const std::optional<int64_t> bad = first_index_outside(target, 0, classes);
  TORCH_CHECK(!bad.has_value(), "target out of range");
  return {rows, classes};
}

at::Tensor forward(const at::Tensor& self, const at::Tensor& target, const at::Scalar& p,
                   const at::Scalar& margin, const at::Tensor* weight, int64_t reduction) {
  const c10::Device device = nn::check_device("aten::multi_margin_loss", {&self, &target, weight});
  const MarginShape shape = check_margin(self, target, weight, p);
  const c10::DeviceGuard guard(device);
  at::Tensor out = reduction == 0 && target.dim() > 0 ? at::empty({shape.rows}, self.options())
                                                      : at::empty({}, self.options());
  const kernels::TensorView x = view_of(self.reshape({shape.rows, shape.classes}));
  const kernels::TensorView t = view_of(target.reshape({shape.rows}));
  const bool has_weight = weight != nullptr;
  const at::Tensor flat_weight = has_weight ? weight->reshape({-1}) : at::Tensor();
  const kernels::TensorView w = has_weight ? view_of(flat_weight) : kernels::TensorView{};
  kernels::TensorView o = view_of(out);
  const int64_t power = p.toLong();
  const double m = margin.toDouble();
  const auto red = static_cast<kernels::LossReduction>(reduction);
  stream_for(out).enqueue("aten::multi_margin_loss", [=] {
    kernels::multi_margin_loss_forward(o, x, t, has_weight ? &w : nullptr, power, m, red);
  });
  return out;
}

at::Tensor backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                    const at::Scalar& p, const at::Scalar& margin, const at::Tensor* weight,
                    int64_t reduction) {
  const c10::Device device =
      nn::check_device("aten::multi_margin_loss_backward", {&grad_output, &self, &target, weight});
  const MarginShape shape = check_margin(self, target, weight, p);
  const c10::DeviceGuard guard(device);
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  if (grad_input.numel() == 0) return grad_input;
  const kernels::TensorView gi = view_of(grad_input.view({shape.rows, shape.classes}));
  const kernels::TensorView x = view_of(self.reshape({shape.rows, shape.classes}));
  const kernels::TensorView t = view_of(target.reshape({shape.rows}));
  const kernels::TensorView go = view_of(grad_output);
  const bool has_weight = weight != nullptr;
  const at::Tensor flat_weight = has_weight ? weight->reshape({-1}) : at::Tensor();
  const kernels::TensorView w = has_weight ? view_of(flat_weight) : kernels::TensorView{};
  const int64_t power = p.toLong();
  const double m = margin.toDouble();
  const auto red = static_cast<kernels::LossReduction>(reduction);
  stream_for(grad_input).enqueue("aten::multi_margin_loss_backward", [=] {
    kernels::multi_margin_loss_backward(gi, go, x, t, has_weight ? &w : nullptr, power, m, red);
  });
  return grad_input;
}

}  // namespace

at::Tensor multi_margin_loss(const at::Tensor& self, const at::Tensor& target, const at::Scalar& p,
                             const at::Scalar& margin, const std::optional<at::Tensor>& weight,
                             int64_t reduction) {
  if (!margin_is_native({&self, opt(weight)})) {
    return OPENNEURON_FALLBACK(multi_margin_loss, self, target, p, margin, weight, reduction);
  }
  OPENNEURON_NATIVE_OP("aten::multi_margin_loss");
  return forward(self, target, p, margin, opt(weight), reduction);
}

at::Tensor& multi_margin_loss_out(const at::Tensor& self, const at::Tensor& target,
                                  const at::Scalar& p, const at::Scalar& margin,
                                  const std::optional<at::Tensor>& weight, int64_t reduction,
                                  at::Tensor& out) {
  if (!margin_is_native({&self, opt(weight), &out})) {
    return OPENNEURON_FALLBACK(multi_margin_loss_out, self, target, p, margin, weight, reduction,
                               out);
  }
  OPENNEURON_NATIVE_OP("aten::multi_margin_loss.out");
  return assign_out(out, forward(self, target, p, margin, opt(weight), reduction));
}

at::Tensor multi_margin_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                      const at::Tensor& target, const at::Scalar& p,
                                      const at::Scalar& margin,
                                      const std::optional<at::Tensor>& weight, int64_t reduction) {
  if (!margin_is_native({&grad_output, &self, opt(weight)})) {
    return OPENNEURON_FALLBACK(multi_margin_loss_backward, grad_output, self, target, p, margin,
                               weight, reduction);
  }
  OPENNEURON_NATIVE_OP("aten::multi_margin_loss_backward");
  return backward(grad_output, self, target, p, margin, opt(weight), reduction);
}

at::Tensor& multi_margin_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                           const at::Tensor& target, const at::Scalar& p,
                                           const at::Scalar& margin,
                                           const std::optional<at::Tensor>& weight,
                                           int64_t reduction, at::Tensor& grad_input) {
  if (!margin_is_native({&grad_output, &self, opt(weight), &grad_input})) {
    return OPENNEURON_FALLBACK(multi_margin_loss_backward_grad_input, grad_output, self, target, p,
                               margin, weight, reduction, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::multi_margin_loss_backward.grad_input");
  return assign_out(grad_input,
                    backward(grad_output, self, target, p, margin, opt(weight), reduction));
}

}  // namespace openneuron::bridge
