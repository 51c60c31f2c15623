// Losses on the device: nll_loss (1-D/2-D targets) and mse_loss, forward and backward.
// cross_entropy is PyTorch's composite of log_softmax and nll_loss.
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/nn/nn_helpers.h"
#include "aten/ops/nn/ops_nn.h"
#include "aten/ops/shape/index_bounds.h"
#include "kernels/nn/loss.h"

namespace openneuron::bridge {

namespace {

using nn::opt;

// self as [N, C, M] and target as [N, M] (M = 1 for nll_loss, H*W for nll_loss2d).
struct NllViews {
  kernels::TensorView input, target;
};

NllViews nll_views(const at::Tensor& self, const at::Tensor& target) {
  NllViews v;
  kernels::TensorView in = view_of(self);
  kernels::TensorView tg = view_of(target);
  if (self.dim() == 1) {  // [C] with a 0-dim target
    in = nn::with_unit_dim(nn::with_unit_dim(in, 0), 2);
    tg.ndim = 2;
    tg.sizes[0] = tg.sizes[1] = 1;
    tg.strides[0] = tg.strides[1] = 0;
  } else if (self.dim() == 2) {
    in = nn::with_unit_dim(in, 2);
    tg = nn::with_unit_dim(tg, 1);
  } else {  // [N, C, H, W] and [N, H, W]: merge H and W where the strides allow
    TORCH_CHECK(self.dim() == 4 && target.dim() == 3,
                "nll_loss2d: expected 4D input and 3D target");
    in = view_of(self.reshape({self.size(0), self.size(1), -1}));
    tg = view_of(target.reshape({target.size(0), -1}));
  }
  v.input = in;
  v.target = tg;
  return v;
}

void check_nll(const char* name, const at::Tensor& self, const at::Tensor& target,
               const at::Tensor* weight, bool two_d) {
  if (two_d) {
    TORCH_CHECK(self.dim() == 4,
                "only batches of spatial inputs supported (4D tensors), but got input of size: ",
                self.sizes());
    TORCH_CHECK(target.dim() == 3,
                "only batches of spatial targets supported (3D tensors) but got targets of size: ",
                target.sizes());
    TORCH_CHECK(self.size(0) == target.size(0) && self.size(2) == target.size(1) &&
                    self.size(3) == target.size(2),
                "input and target batch or spatial sizes don't match: target ", target.sizes(),
                ", input ", self.sizes());
  } else {
    TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "input tensor should be 1D or 2D");
    TORCH_CHECK(target.dim() <= 1, "0D or 1D target tensor expected, multi-target not supported");
    const bool no_batch_dim = self.dim() == 1 && target.dim() == 0;
    TORCH_CHECK(no_batch_dim || self.size(0) == target.size(0),
                "size mismatch (got input: ", self.sizes(), ", target: ", target.sizes(), ")");
  }
  TORCH_CHECK(target.scalar_type() == at::kLong, name, ": expected target of dtype Long, got ",
              target.scalar_type());
  const int64_t classes = self.size(self.dim() == 1 ? 0 : 1);
  TORCH_CHECK(weight == nullptr || weight->numel() == classes,
              "weight tensor should be defined either for all ", classes,
              " classes or no classes but got weight tensor of shape: ", weight->sizes());
}

std::tuple<at::Tensor, at::Tensor> nll_forward_impl(const char* name, const at::Tensor& self,
                                                    const at::Tensor& target,
                                                    const at::Tensor* weight, int64_t reduction,
                                                    int64_t ignore_index, bool two_d) {
  const c10::Device device = nn::check_device(name, {&self, &target, weight});
  check_nll(name, self, target, weight, two_d);
  const c10::DeviceGuard guard(device);
  // Raised at the call as on the CPU, not by the queued kernel (the backward reuses targets
  // the forward has checked).
  const std::optional<int64_t> bad_target =
      first_index_outside(target, 0, self.size(self.dim() == 1 ? 0 : 1), ignore_index);
  TORCH_CHECK_INDEX(!bad_target.has_value(), "Target ", bad_target.value_or(0),
                    " is out of bounds.");
  at::Tensor output;
  if (reduction == 0) {
    output = at::empty(target.sizes(), self.options());
  } else {
    output = at::empty({}, self.options());
  }
  at::Tensor total_weight = at::empty({}, self.options());
  const NllViews v = nll_views(self, target);
  kernels::TensorView out_view = view_of(output);
  if (reduction == 0) {
    // The dense output seen with the target view's [N, M] shape.
    out_view.ndim = 2;
    out_view.sizes[0] = v.target.sizes[0];
    out_view.sizes[1] = v.target.sizes[1];
    out_view.strides[0] = v.target.sizes[1];
    out_view.strides[1] = 1;
  }
  const kernels::TensorView tw = view_of(total_weight);
  const at::Tensor weight_dense = weight != nullptr ? weight->reshape({-1}) : at::Tensor();
  const kernels::TensorView wv = weight != nullptr ? view_of(weight_dense) : kernels::TensorView{};
  const bool has_w = weight != nullptr;
  const auto red = static_cast<kernels::LossReduction>(reduction);
  stream_for(output).enqueue(name, [=] {
    kernels::nll_loss_forward(out_view, tw, v.input, v.target, has_w ? &wv : nullptr, red,
                              ignore_index);
  });
  return {output, total_weight};
}

at::Tensor nll_backward_impl(const char* name, const at::Tensor& grad_output,
                             const at::Tensor& self, const at::Tensor& target,
                             const at::Tensor* weight, int64_t reduction, int64_t ignore_index,
                             const at::Tensor& total_weight, bool two_d) {
  const c10::Device device =
      nn::check_device(name, {&grad_output, &self, &target, weight, &total_weight});
  check_nll(name, self, target, weight, two_d);
  const c10::DeviceGuard guard(device);
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  if (grad_input.numel() == 0) return grad_input;
  const NllViews v = nll_views(grad_input, target);
  kernels::TensorView go = view_of(grad_output);
  if (reduction == 0) {
    const at::Tensor go_rows = grad_output.reshape({v.target.sizes[0], v.target.sizes[1]});
    go = view_of(go_rows);
  }
  const kernels::TensorView tw = view_of(total_weight);
  const at::Tensor weight_dense = weight != nullptr ? weight->reshape({-1}) : at::Tensor();
  const kernels::TensorView wv = weight != nullptr ? view_of(weight_dense) : kernels::TensorView{};
  const bool has_w = weight != nullptr;
  const auto red = static_cast<kernels::LossReduction>(reduction);
  stream_for(grad_input).enqueue(name, [=] {
    kernels::nll_loss_backward(v.input, go, v.target, has_w ? &wv : nullptr, red, ignore_index, tw);
  });
  return grad_input;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor& self,
                                                    const at::Tensor& target,
                                                    const std::optional<at::Tensor>& weight,
                                                    int64_t reduction, int64_t ignore_index) {
  if (!nn::all_nn_dtypes({&self, opt(weight)})) {
    at::Tensor output = at::empty({0}, self.options()), total = at::empty({0}, self.options());
    OPENNEURON_FALLBACK(nll_loss_forward_output, self, target, weight, reduction, ignore_index,
                        output, total);
    return {output, total};
  }
  OPENNEURON_NATIVE_OP("aten::nll_loss_forward");
  return nll_forward_impl("aten::nll_loss_forward", self, target, opt(weight), reduction,
                          ignore_index, false);
}

std::tuple<at::Tensor&, at::Tensor&> nll_loss_forward_out(
    const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight,
    int64_t reduction, int64_t ignore_index, at::Tensor& output, at::Tensor& total_weight) {
  if (!nn::all_nn_dtypes({&self, opt(weight), &output, &total_weight})) {
    return OPENNEURON_FALLBACK(nll_loss_forward_output, self, target, weight, reduction,
                               ignore_index, output, total_weight);
  }
  OPENNEURON_NATIVE_OP("aten::nll_loss_forward.output");
  auto result = nll_forward_impl("aten::nll_loss_forward", self, target, opt(weight), reduction,
                                 ignore_index, false);
  assign_out(output, std::get<0>(result));
  assign_out(total_weight, std::get<1>(result));
  return {output, total_weight};
}

at::Tensor nll_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                             const at::Tensor& target, const std::optional<at::Tensor>& weight,
                             int64_t reduction, int64_t ignore_index,
                             const at::Tensor& total_weight) {
  if (!nn::all_nn_dtypes({&grad_output, &self, opt(weight), &total_weight})) {
    at::Tensor grad_input = at::empty({0}, self.options());
    return OPENNEURON_FALLBACK(nll_loss_backward_grad_input, grad_output, self, target, weight,
                               reduction, ignore_index, total_weight, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::nll_loss_backward");
  return nll_backward_impl("aten::nll_loss_backward", grad_output, self, target, opt(weight),
                           reduction, ignore_index, total_weight, false);
}

at::Tensor& nll_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                  const at::Tensor& target, const std::optional<at::Tensor>& weight,
                                  int64_t reduction, int64_t ignore_index,
                                  const at::Tensor& total_weight, at::Tensor& grad_input) {
  if (!nn::all_nn_dtypes({&grad_output, &self, opt(weight), &total_weight, &grad_input})) {
    return OPENNEURON_FALLBACK(nll_loss_backward_grad_input, grad_output, self, target, weight,
                               reduction, ignore_index, total_weight, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::nll_loss_backward.grad_input");
  return assign_out(grad_input,
                    nll_backward_impl("aten::nll_loss_backward", grad_output, self, target,
                                      opt(weight), reduction, ignore_index, total_weight, false));
}

std::tuple<at::Tensor, at::Tensor> nll_loss2d_forward(const at::Tensor& self,
                                                      const at::Tensor& target,
                                                      const std::optional<at::Tensor>& weight,
                                                      int64_t reduction, int64_t ignore_index) {
  if (!nn::all_nn_dtypes({&self, opt(weight)})) {
    return OPENNEURON_FALLBACK(nll_loss2d_forward, self, target, weight, reduction, ignore_index);
  }
  OPENNEURON_NATIVE_OP("aten::nll_loss2d_forward");
  return nll_forward_impl("aten::nll_loss2d_forward", self, target, opt(weight), reduction,
                          ignore_index, true);
}

std::tuple<at::Tensor&, at::Tensor&> nll_loss2d_forward_out(
    const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight,
    int64_t reduction, int64_t ignore_index, at::Tensor& output, at::Tensor& total_weight) {
  if (!nn::all_nn_dtypes({&self, opt(weight), &output, &total_weight})) {
    return OPENNEURON_FALLBACK(nll_loss2d_forward_output, self, target, weight, reduction,
                               ignore_index, output, total_weight);
  }
  OPENNEURON_NATIVE_OP("aten::nll_loss2d_forward.output");
  auto result = nll_forward_impl("aten::nll_loss2d_forward", self, target, opt(weight), reduction,
                                 ignore_index, true);
  assign_out(output, std::get<0>(result));
  assign_out(total_weight, std::get<1>(result));
  return {output, total_weight};
}

at::Tensor nll_loss2d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                               const at::Tensor& target, const std::optional<at::Tensor>& weight,
                               int64_t reduction, int64_t ignore_index,
                               const at::Tensor& total_weight) {
  if (!nn::all_nn_dtypes({&grad_output, &self, opt(weight), &total_weight})) {
    return OPENNEURON_FALLBACK(nll_loss2d_backward, grad_output, self, target, weight, reduction,
                               ignore_index, total_weight);
  }
  OPENNEURON_NATIVE_OP("aten::nll_loss2d_backward");
  return nll_backward_impl("aten::nll_loss2d_backward", grad_output, self, target, opt(weight),
                           reduction, ignore_index, total_weight, true);
}

at::Tensor& nll_loss2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    const at::Tensor& target,
                                    const std::optional<at::Tensor>& weight, int64_t reduction,
                                    int64_t ignore_index, const at::Tensor& total_weight,
                                    at::Tensor& grad_input) {
  if (!nn::all_nn_dtypes({&grad_output, &self, opt(weight), &total_weight, &grad_input})) {
    return OPENNEURON_FALLBACK(nll_loss2d_backward_grad_input, grad_output, self, target, weight,
                               reduction, ignore_index, total_weight, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::nll_loss2d_backward.grad_input");
  return assign_out(grad_input,
                    nll_backward_impl("aten::nll_loss2d_backward", grad_output, self, target,
                                      opt(weight), reduction, ignore_index, total_weight, true));
}

at::Tensor mse_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction) {
  if (!nn::all_nn_dtypes({&self, &target})) {
    at::Tensor out = at::empty({0}, self.options());
    return OPENNEURON_FALLBACK(mse_loss_out, self, target, reduction, out);
  }
  OPENNEURON_NATIVE_OP("aten::mse_loss");
  const c10::Device device = nn::check_device("aten::mse_loss", {&self, &target});
  const c10::DeviceGuard guard(device);
  const auto shape = at::infer_size(self.sizes(), target.sizes());
  const at::ScalarType dtype = at::result_type(self, target);
  at::Tensor out = reduction == 0 ? at::empty(shape, self.options().dtype(dtype))
                                  : at::empty({}, self.options().dtype(dtype));
  if (reduction == 0 && out.numel() == 0) return out;
  const kernels::TensorView x = broadcast_view(self, shape), y = broadcast_view(target, shape);
  kernels::TensorView o = view_of(out);
  const auto red = static_cast<kernels::LossReduction>(reduction);
  stream_for(out).enqueue("aten::mse_loss", [=] { kernels::mse_loss_forward(o, x, y, red); });
  return out;
}

at::Tensor& mse_loss_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                         at::Tensor& out) {
  if (!nn::all_nn_dtypes({&self, &target, &out})) {
    return OPENNEURON_FALLBACK(mse_loss_out, self, target, reduction, out);
  }
  OPENNEURON_NATIVE_OP("aten::mse_loss.out");
  nn::check_device("aten::mse_loss.out", {&self, &target, &out});
  return assign_out(out, bridge::mse_loss(self, target, reduction));
}

at::Tensor mse_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                             const at::Tensor& target, int64_t reduction) {
  if (!nn::all_nn_dtypes({&grad_output, &self, &target})) {
    at::Tensor grad_input = at::empty({0}, self.options());
    return OPENNEURON_FALLBACK(mse_loss_backward_grad_input, grad_output, self, target, reduction,
                               grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::mse_loss_backward");
  const c10::Device device =
      nn::check_device("aten::mse_loss_backward", {&grad_output, &self, &target});
  const c10::DeviceGuard guard(device);
  const auto shape = at::infer_size(self.sizes(), target.sizes());
  at::Tensor grad_input = at::empty(shape, self.options());
  if (grad_input.numel() == 0) return grad_input;
  const kernels::TensorView gi = view_of(grad_input), x = broadcast_view(self, shape),
                            y = broadcast_view(target, shape),
                            go = broadcast_view(grad_output, shape);
  const auto red = static_cast<kernels::LossReduction>(reduction);
  stream_for(grad_input).enqueue("aten::mse_loss_backward", [=] {
    kernels::mse_loss_backward(gi, go, x, y, red);
  });
  return grad_input;
}

at::Tensor& mse_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                  const at::Tensor& target, int64_t reduction,
                                  at::Tensor& grad_input) {
  if (!nn::all_nn_dtypes({&grad_output, &self, &target, &grad_input})) {
    return OPENNEURON_FALLBACK(mse_loss_backward_grad_input, grad_output, self, target, reduction,
                               grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::mse_loss_backward.grad_input");
  return assign_out(grad_input, bridge::mse_loss_backward(grad_output, self, target, reduction));
}

}  // namespace openneuron::bridge
