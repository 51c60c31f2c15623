// Normalisation on the device: batch norm (and its _legit variants), group norm, layer norm
// and RMS norm, forward and backward.
#include <ATen/native/Resize.h>
#include <ATen/ops/_fused_rms_norm.h>
#include <ATen/ops/add.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/rsqrt.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/irange.h>

#include <limits>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/nn/nn_helpers.h"
#include "aten/ops/nn/ops_nn.h"
#include "kernels/nn/normalization.h"

namespace openneuron::bridge {

namespace {

using nn::opt;

// input viewed as [N, C, M] (a reshape: a copy only when the dims cannot merge).
at::Tensor as_ncm(const at::Tensor& input) {
  TORCH_CHECK(input.dim() >= 2, "batch_norm: expected at least 2D input (got ", input.dim(), "D)");
  return input.reshape({input.size(0), input.size(1), -1});
}

kernels::TensorView ncm_view(const at::Tensor& t) {
  if (t.numel() == 0) {
    kernels::TensorView view = view_of(t);
    view.ndim = 3;
    view.sizes[0] = t.dim() > 0 ? t.size(0) : 0;
    view.sizes[1] = t.dim() > 1 ? t.size(1) : 0;
    view.sizes[2] = 0;
    for (int d = 0; d < 3; ++d) view.strides[d] = 1;
    return view;
  }
  return view_of(as_ncm(t));
}

// A dense [R, D] view of `t` normalised over its last `tail` elements per row.
at::Tensor as_rows(const at::Tensor& t, int64_t row_len) {
  return t.reshape({row_len == 0 ? 0 : t.numel() / row_len, row_len});
}

kernels::TensorView optional_view(const at::Tensor* t) {
  return t != nullptr ? view_of(*t) : kernels::TensorView{};
}

at::ScalarType stats_dtype(const at::Tensor& input, const at::Tensor* running_mean,
                           const at::Tensor* weight) {
  if (running_mean != nullptr) return running_mean->scalar_type();
  if (weight != nullptr) return weight->scalar_type();
  return input.scalar_type();
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_impl(
    const char* name, const at::Tensor& input, const at::Tensor* weight, const at::Tensor* bias,
    const at::Tensor* running_mean, const at::Tensor* running_var, bool training, double momentum,
    double eps) {
  const c10::Device device =
      nn::check_device(name, {&input, weight, bias, running_mean, running_var});
  const c10::DeviceGuard guard(device);
  const int64_t channels = input.size(1);
  if (!training) {
    TORCH_CHECK(running_mean != nullptr && running_var != nullptr, name,
                ": running_mean and running_var must be defined in evaluation mode");
  }
  at::Tensor out = at::empty(input.sizes(), input.options());
  const at::ScalarType stat_type = stats_dtype(input, running_mean, weight);
  at::Tensor save_mean = at::empty({training ? channels : 0}, input.options().dtype(stat_type));
  at::Tensor save_invstd = at::empty({training ? channels : 0}, input.options().dtype(stat_type));
  const kernels::TensorView out_view = ncm_view(out), in_view = ncm_view(input);
  const kernels::TensorView w = optional_view(weight), b = optional_view(bias),
                            rm = optional_view(running_mean), rv = optional_view(running_var),
                            sm = view_of(save_mean), si = view_of(save_invstd);
  const bool hw = weight != nullptr, hb = bias != nullptr, hrm = running_mean != nullptr,
             hrv = running_var != nullptr;
  stream_for(out).enqueue(name, [=] {
    kernels::batch_norm_forward(out_view, training ? &sm : nullptr, training ? &si : nullptr,
                                in_view, hw ? &w : nullptr, hb ? &b : nullptr, hrm ? &rm : nullptr,
                                hrv ? &rv : nullptr, training, momentum, eps);
  });
  return {out, save_mean, save_invstd};
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& running_mean,
    const std::optional<at::Tensor>& running_var, bool training, double momentum, double eps) {
  if (!nn::all_nn_dtypes({&input, opt(weight), opt(bias), opt(running_mean), opt(running_var)})) {
    return OPENNEURON_FALLBACK(native_batch_norm, input, weight, bias, running_mean, running_var,
                               training, momentum, eps);
  }
  OPENNEURON_NATIVE_OP("aten::native_batch_norm");
  return batch_norm_impl("aten::native_batch_norm", input, opt(weight), opt(bias),
                         opt(running_mean), opt(running_var), training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_legit(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, at::Tensor& running_mean, at::Tensor& running_var,
    bool training, double momentum, double eps) {
  if (!nn::all_nn_dtypes({&input, opt(weight), opt(bias), &running_mean, &running_var})) {
    return OPENNEURON_FALLBACK(_native_batch_norm_legit, input, weight, bias, running_mean,
                               running_var, training, momentum, eps);
  }
  OPENNEURON_NATIVE_OP("aten::_native_batch_norm_legit");
  return batch_norm_impl("aten::_native_batch_norm_legit", input, opt(weight), opt(bias),
                         &running_mean, &running_var, training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_legit_no_stats(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, bool training, double momentum, double eps) {
  if (!nn::all_nn_dtypes({&input, opt(weight), opt(bias)})) {
    return OPENNEURON_FALLBACK(_native_batch_norm_legit_no_stats, input, weight, bias, training,
                               momentum, eps);
  }
  OPENNEURON_NATIVE_OP("aten::_native_batch_norm_legit.no_stats");
  TORCH_CHECK(training, "_native_batch_norm_legit.no_stats needs training=True");
  return batch_norm_impl("aten::_native_batch_norm_legit.no_stats", input, opt(weight), opt(bias),
                         nullptr, nullptr, true, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_legit_no_training(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, const at::Tensor& running_mean,
    const at::Tensor& running_var, double momentum, double eps) {
  if (!nn::all_nn_dtypes({&input, opt(weight), opt(bias), &running_mean, &running_var})) {
    return OPENNEURON_FALLBACK(_native_batch_norm_legit_no_training, input, weight, bias,
                               running_mean, running_var, momentum, eps);
  }
  OPENNEURON_NATIVE_OP("aten::_native_batch_norm_legit_no_training");
  return batch_norm_impl("aten::_native_batch_norm_legit_no_training", input, opt(weight),
                         opt(bias), &running_mean, &running_var, false, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_invstd,
    bool train, double eps, std::array<bool, 3> output_mask) {
  if (!nn::all_nn_dtypes({&grad_out, &input, opt(weight), opt(running_mean), opt(running_var),
                          opt(save_mean), opt(save_invstd)})) {
    return OPENNEURON_FALLBACK(native_batch_norm_backward, grad_out, input, weight, running_mean,
                               running_var, save_mean, save_invstd, train, eps, output_mask);
  }
  OPENNEURON_NATIVE_OP("aten::native_batch_norm_backward");
  const c10::Device device = nn::check_device("aten::native_batch_norm_backward",
                                              {&grad_out, &input, opt(weight), opt(running_mean),
                                               opt(running_var), opt(save_mean), opt(save_invstd)});
  const c10::DeviceGuard guard(device);
  const at::Tensor* mean = train ? opt(save_mean) : opt(running_mean);
  const at::Tensor* invstd_or_var = train ? opt(save_invstd) : opt(running_var);
  TORCH_CHECK(mean != nullptr && invstd_or_var != nullptr, "native_batch_norm_backward: missing ",
              train ? "saved" : "running", " statistics");
  const int64_t channels = input.size(1);
  const at::Tensor* w = opt(weight);
  at::Tensor grad_input, grad_weight, grad_bias;
  const at::TensorOptions param_options = w != nullptr ? w->options() : input.options();
  if (output_mask[0]) grad_input = at::empty(input.sizes(), input.options());
  if (output_mask[1]) grad_weight = at::empty({channels}, param_options);
  if (output_mask[2]) grad_bias = at::empty({channels}, param_options);
  const kernels::TensorView gi = output_mask[0] ? ncm_view(grad_input) : kernels::TensorView{};
  const kernels::TensorView gw = optional_view(output_mask[1] ? &grad_weight : nullptr);
  const kernels::TensorView gb = optional_view(output_mask[2] ? &grad_bias : nullptr);
  const kernels::TensorView go = ncm_view(grad_out), in = ncm_view(input), wv = optional_view(w),
                            mv = view_of(*mean), iv = view_of(*invstd_or_var);
  const bool has_w = w != nullptr;
  stream_for(input).enqueue("aten::native_batch_norm_backward", [=] {
    kernels::batch_norm_backward(output_mask[0] ? &gi : nullptr, output_mask[1] ? &gw : nullptr,
                                 output_mask[2] ? &gb : nullptr, go, in, has_w ? &wv : nullptr, mv,
                                 iv, train, eps);
  });
  return {grad_input, grad_weight, grad_bias};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_group_norm(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, int64_t n, int64_t c, int64_t hxw, int64_t group,
    double eps) {
  if (!nn::all_nn_dtypes({&input, opt(weight), opt(bias)})) {
    return OPENNEURON_FALLBACK(native_group_norm, input, weight, bias, n, c, hxw, group, eps);
  }
  OPENNEURON_NATIVE_OP("aten::native_group_norm");
  const c10::Device device =
      nn::check_device("aten::native_group_norm", {&input, opt(weight), opt(bias)});
  const c10::DeviceGuard guard(device);
  TORCH_CHECK(group > 0 && c % group == 0,
              "Expected number of channels in input to be divisible "
              "by num_groups, but got input of shape ",
              input.sizes(), " and num_groups=", group);
  at::Tensor out = at::empty(input.sizes(), input.options());
  at::Tensor mean = at::empty({n, group}, input.options());
  at::Tensor rstd = at::empty({n, group}, input.options());
  if (input.numel() == 0 && mean.numel() == 0) return {out, mean, rstd};
  const kernels::TensorView out_view = ncm_view(out), in_view = ncm_view(input),
                            mean_view = view_of(mean), rstd_view = view_of(rstd);
  const at::Tensor *w = opt(weight), *b = opt(bias);
  const kernels::TensorView wv = optional_view(w), bv = optional_view(b);
  const bool hw = w != nullptr, hb = b != nullptr;
  stream_for(out).enqueue("aten::native_group_norm", [=] {
    kernels::TensorView mean_flat = nn::flat(mean_view), rstd_flat = nn::flat(rstd_view);
    kernels::group_norm_forward(out_view, mean_flat, rstd_flat, in_view, hw ? &wv : nullptr,
                                hb ? &bv : nullptr, group, eps);
  });
  return {out, mean, rstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_group_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& mean,
    const at::Tensor& rstd, const std::optional<at::Tensor>& weight, int64_t n, int64_t c,
    int64_t hxw, int64_t group, std::array<bool, 3> output_mask) {
  if (!nn::all_nn_dtypes({&grad_out, &input, &mean, &rstd, opt(weight)})) {
    return OPENNEURON_FALLBACK(native_group_norm_backward, grad_out, input, mean, rstd, weight, n,
                               c, hxw, group, output_mask);
  }
  OPENNEURON_NATIVE_OP("aten::native_group_norm_backward");
  const c10::Device device = nn::check_device("aten::native_group_norm_backward",
                                              {&grad_out, &input, &mean, &rstd, opt(weight)});
  const c10::DeviceGuard guard(device);
  const at::Tensor* w = opt(weight);
  const at::TensorOptions param_options = w != nullptr ? w->options() : input.options();
  at::Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0]) grad_input = at::empty(input.sizes(), input.options());
  if (output_mask[1]) grad_weight = at::empty({c}, param_options);
  if (output_mask[2]) grad_bias = at::empty({c}, param_options);
  const at::Tensor mean_dense = mean.contiguous(), rstd_dense = rstd.contiguous();
  const kernels::TensorView gi = output_mask[0] ? ncm_view(grad_input) : kernels::TensorView{};
  const kernels::TensorView gw = optional_view(output_mask[1] ? &grad_weight : nullptr);
  const kernels::TensorView gb = optional_view(output_mask[2] ? &grad_bias : nullptr);
  const kernels::TensorView go = ncm_view(grad_out), in = ncm_view(input),
                            mv = nn::flat(view_of(mean_dense)), rv = nn::flat(view_of(rstd_dense)),
                            wv = optional_view(w);
  const bool has_w = w != nullptr;
  stream_for(input).enqueue("aten::native_group_norm_backward", [=] {
    kernels::group_norm_backward(output_mask[0] ? &gi : nullptr, output_mask[1] ? &gw : nullptr,
                                 output_mask[2] ? &gb : nullptr, go, in, mv, rv,
                                 has_w ? &wv : nullptr, group);
  });
  return {grad_input, grad_weight, grad_bias};
}

namespace {

// Rows and row length of a norm over the trailing `normalized_shape`.
int64_t normalized_length(const char* name, const at::Tensor& input,
                          at::IntArrayRef normalized_shape) {
  const int64_t dims = static_cast<int64_t>(normalized_shape.size());
  TORCH_CHECK(dims >= 1, name, ": normalized_shape must have at least one dimension");
  TORCH_CHECK(
      input.dim() >= dims && input.sizes().slice(input.dim() - dims).equals(normalized_shape),
      "Given normalized_shape=", normalized_shape, ", expected input with shape [*, ",
      normalized_shape, "], but got input of size", input.sizes());
  return c10::multiply_integers(normalized_shape);
}

std::vector<int64_t> stats_shape(const at::Tensor& input, int64_t normalized_dims) {
  std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
  for (int64_t d = input.dim() - normalized_dims; d < input.dim(); ++d) shape[d] = 1;
  return shape;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm(
    const at::Tensor& input, at::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias, double eps) {
  if (!nn::all_nn_dtypes({&input, opt(weight), opt(bias)})) {
    return OPENNEURON_FALLBACK(native_layer_norm, input, normalized_shape, weight, bias, eps);
  }
  OPENNEURON_NATIVE_OP("aten::native_layer_norm");
  const c10::Device device =
      nn::check_device("aten::native_layer_norm", {&input, opt(weight), opt(bias)});
  const c10::DeviceGuard guard(device);
  const int64_t row_len = normalized_length("layer_norm", input, normalized_shape);
  at::Tensor out = at::empty(input.sizes(), input.options());
  const auto shape = stats_shape(input, static_cast<int64_t>(normalized_shape.size()));
  // 16-bit inputs keep their statistics in fp32, as the meta kernel promises for every device
  // but the CPU: rounding rstd to the 16-bit type before the backward costs the weight
  // gradient several ulps where the variance is ill-conditioned.
  const bool narrow = input.scalar_type() == at::kHalf || input.scalar_type() == at::kBFloat16;
  const at::TensorOptions stats_options =
      narrow ? input.options().dtype(at::kFloat) : input.options();
  at::Tensor mean = at::empty(shape, stats_options);
  at::Tensor rstd = at::empty(shape, stats_options);
  if (mean.numel() == 0) return {out, mean, rstd};
  const at::Tensor rows_in = as_rows(input, row_len);
  const at::Tensor *w = opt(weight), *b = opt(bias);
  const at::Tensor w_flat = w != nullptr ? w->reshape({-1}) : at::Tensor();
  const at::Tensor b_flat = b != nullptr ? b->reshape({-1}) : at::Tensor();
  const kernels::TensorView out_view = view_of(as_rows(out, row_len)), in_view = view_of(rows_in),
                            mv = nn::flat(view_of(mean)), rv = nn::flat(view_of(rstd)),
                            wv = optional_view(w ? &w_flat : nullptr),
                            bv = optional_view(b ? &b_flat : nullptr);
  const bool hw = w != nullptr, hb = b != nullptr;
  stream_for(out).enqueue("aten::native_layer_norm", [=] {
    kernels::row_norm_forward(out_view, &mv, rv, in_view, hw ? &wv : nullptr, hb ? &bv : nullptr,
                              eps, /*rms=*/false);
  });
  return {out, mean, rstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, at::IntArrayRef normalized_shape,
    const at::Tensor& mean, const at::Tensor& rstd, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, std::array<bool, 3> output_mask) {
  if (!nn::all_nn_dtypes({&grad_out, &input, &mean, &rstd, opt(weight), opt(bias)})) {
    return OPENNEURON_FALLBACK(native_layer_norm_backward, grad_out, input, normalized_shape, mean,
                               rstd, weight, bias, output_mask);
  }
  OPENNEURON_NATIVE_OP("aten::native_layer_norm_backward");
  const c10::Device device =
      nn::check_device("aten::native_layer_norm_backward",
                       {&grad_out, &input, &mean, &rstd, opt(weight), opt(bias)});
  const c10::DeviceGuard guard(device);
  const int64_t row_len = normalized_length("layer_norm", input, normalized_shape);
  const at::Tensor *w = opt(weight), *b = opt(bias);
  at::Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0]) grad_input = at::empty(input.sizes(), input.options());
  if (output_mask[1] && w != nullptr) grad_weight = at::empty(w->sizes(), w->options());
  if (output_mask[2] && b != nullptr) grad_bias = at::empty(b->sizes(), b->options());
  if (output_mask[1] && w == nullptr) grad_weight = at::empty(normalized_shape, input.options());
  if (output_mask[2] && b == nullptr) grad_bias = at::empty(normalized_shape, input.options());
  const at::Tensor w_flat = w != nullptr ? w->reshape({-1}) : at::Tensor();
  const at::Tensor mean_dense = mean.contiguous(), rstd_dense = rstd.contiguous();
  const kernels::TensorView gi =
      output_mask[0] ? view_of(as_rows(grad_input, row_len)) : kernels::TensorView{};
  const kernels::TensorView gw =
      output_mask[1] ? nn::flat(view_of(grad_weight)) : kernels::TensorView{};
  const kernels::TensorView gb =
      output_mask[2] ? nn::flat(view_of(grad_bias)) : kernels::TensorView{};
  const kernels::TensorView go = view_of(as_rows(grad_out, row_len)),
                            in = view_of(as_rows(input, row_len)),
                            mv = nn::flat(view_of(mean_dense)), rv = nn::flat(view_of(rstd_dense)),
                            wv = optional_view(w ? &w_flat : nullptr);
  const bool has_w = w != nullptr;
  stream_for(input).enqueue("aten::native_layer_norm_backward", [=] {
    kernels::row_norm_backward(output_mask[0] ? &gi : nullptr, output_mask[1] ? &gw : nullptr,
                               output_mask[2] ? &gb : nullptr, go, in, &mv, rv,
                               has_w ? &wv : nullptr, /*rms=*/false);
  });
  return {grad_input, grad_weight, grad_bias};
}

std::tuple<at::Tensor, at::Tensor> fused_rms_norm(const at::Tensor& input,
                                                  at::IntArrayRef normalized_shape,
                                                  const std::optional<at::Tensor>& weight,
                                                  std::optional<double> eps) {
  if (!nn::all_nn_dtypes({&input, opt(weight)})) {
    return OPENNEURON_FALLBACK(_fused_rms_norm, input, normalized_shape, weight, eps);
  }
  OPENNEURON_NATIVE_OP("aten::_fused_rms_norm");
  const c10::Device device = nn::check_device("aten::_fused_rms_norm", {&input, opt(weight)});
  const c10::DeviceGuard guard(device);
  const int64_t row_len = normalized_length("rms_norm", input, normalized_shape);
  // eps defaults to the input dtype's machine epsilon, as torch.nn.functional.rms_norm.
  double epsilon = eps.value_or(0.0);
  if (!eps.has_value()) {
    switch (input.scalar_type()) {
      case at::kBFloat16:
        epsilon = 0.0078125;
        break;
      case at::kHalf:
        epsilon = 0.0009765625;
        break;
      default:
        epsilon = std::numeric_limits<float>::epsilon();
    }
  }
  at::Tensor out = at::empty(input.sizes(), input.options());
  at::Tensor rstd = at::empty(stats_shape(input, static_cast<int64_t>(normalized_shape.size())),
                              input.options().dtype(at::kFloat));
  if (rstd.numel() == 0) return {out, rstd};
  const at::Tensor* w = opt(weight);
  const at::Tensor w_flat = w != nullptr ? w->reshape({-1}) : at::Tensor();
  const kernels::TensorView out_view = view_of(as_rows(out, row_len)),
                            in_view = view_of(as_rows(input, row_len)),
                            rv = nn::flat(view_of(rstd)), wv = optional_view(w ? &w_flat : nullptr);
  const bool hw = w != nullptr;
  stream_for(out).enqueue("aten::_fused_rms_norm", [=] {
    kernels::row_norm_forward(out_view, nullptr, rv, in_view, hw ? &wv : nullptr, nullptr, epsilon,
                              /*rms=*/true);
  });
  return {out, rstd};
}

std::tuple<at::Tensor, at::Tensor> fused_rms_norm_backward(const at::Tensor& grad_out,
                                                           const at::Tensor& input,
                                                           at::IntArrayRef normalized_shape,
                                                           const at::Tensor& rstd,
                                                           const std::optional<at::Tensor>& weight,
                                                           std::array<bool, 2> output_mask) {
  if (!nn::all_nn_dtypes({&grad_out, &input, &rstd, opt(weight)})) {
    return OPENNEURON_FALLBACK(_fused_rms_norm_backward, grad_out, input, normalized_shape, rstd,
                               weight, output_mask);
  }
  OPENNEURON_NATIVE_OP("aten::_fused_rms_norm_backward");
  const c10::Device device =
      nn::check_device("aten::_fused_rms_norm_backward", {&grad_out, &input, &rstd, opt(weight)});
  const c10::DeviceGuard guard(device);
  const int64_t row_len = normalized_length("rms_norm", input, normalized_shape);
  const at::Tensor* w = opt(weight);
  at::Tensor grad_input, grad_weight;
  if (output_mask[0]) grad_input = at::empty(input.sizes(), input.options());
  if (output_mask[1] && w != nullptr) grad_weight = at::empty(w->sizes(), w->options());
  const bool want_weight = grad_weight.defined();
  const at::Tensor w_flat = w != nullptr ? w->reshape({-1}) : at::Tensor();
  const at::Tensor rstd_dense = rstd.contiguous();
  const kernels::TensorView gi =
      output_mask[0] ? view_of(as_rows(grad_input, row_len)) : kernels::TensorView{};
  const kernels::TensorView gw =
      want_weight ? nn::flat(view_of(grad_weight)) : kernels::TensorView{};
  const kernels::TensorView go = view_of(as_rows(grad_out, row_len)),
                            in = view_of(as_rows(input, row_len)),
                            rv = nn::flat(view_of(rstd_dense)),
                            wv = optional_view(w ? &w_flat : nullptr);
  const bool has_w = w != nullptr;
  stream_for(input).enqueue("aten::_fused_rms_norm_backward", [=] {
    kernels::row_norm_backward(output_mask[0] ? &gi : nullptr, want_weight ? &gw : nullptr, nullptr,
                               go, in, nullptr, rv, has_w ? &wv : nullptr, /*rms=*/true);
  });
  return {grad_input, grad_weight};
}

at::Tensor rms_norm_autograd(const at::Tensor& input, c10::SymIntArrayRef normalized_shape,
                             const std::optional<at::Tensor>& weight, std::optional<double> eps) {
  if (!nn::all_nn_dtypes({&input, opt(weight)})) {
    // The composite definition, through autograd: x * rsqrt(mean(x^2) + eps) * weight.
    std::vector<int64_t> dims;
    for (int64_t d = input.dim() - static_cast<int64_t>(normalized_shape.size()); d < input.dim();
         ++d) {
      dims.push_back(d);
    }
    const double epsilon =
        eps.value_or(input.scalar_type() == at::kDouble ? std::numeric_limits<double>::epsilon()
                                                        : std::numeric_limits<float>::epsilon());
    const at::Tensor mean_square = at::mean(at::mul(input, input), dims, /*keepdim=*/true);
    at::Tensor out = at::mul(input, at::rsqrt(at::add(mean_square, epsilon)));
    return weight.has_value() && weight->defined() ? at::mul(out, *weight) : out;
  }
  return std::get<0>(
      at::_fused_rms_norm(input, C10_AS_INTARRAYREF_SLOW(normalized_shape), weight, eps));
}

}  // namespace openneuron::bridge
