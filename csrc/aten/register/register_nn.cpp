// Registrations of the nn family: convolution, pooling, interpolation, normalisation, losses,
// attention.
#include <ATen/native/transformers/attention.h>
#include <torch/library.h>

#include "aten/ops/nn/ops_interpolate.h"
#include "aten/ops/nn/ops_loss_margin.h"
#include "aten/ops/nn/ops_loss_pointwise.h"
#include "aten/ops/nn/ops_nn.h"
#include "aten/ops/nn/ops_pooling3d.h"

namespace openneuron::bridge {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // Convolution (at::_convolution's backend for PrivateUse1 tensors).
  m.impl("convolution_overrideable", TORCH_FN(convolution_overrideable));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward_overrideable));

  // Pooling.
  m.impl("max_pool2d_with_indices", TORCH_FN(max_pool2d_with_indices));
  m.impl("max_pool2d_with_indices.out", TORCH_FN(max_pool2d_with_indices_out));
  m.impl("max_pool2d_with_indices_backward", TORCH_FN(max_pool2d_with_indices_backward));
  m.impl("max_pool2d_with_indices_backward.grad_input",
         TORCH_FN(max_pool2d_with_indices_backward_out));
  m.impl("avg_pool2d", TORCH_FN(avg_pool2d));
  m.impl("avg_pool2d.out", TORCH_FN(avg_pool2d_out));
  m.impl("avg_pool2d_backward", TORCH_FN(avg_pool2d_backward));
  m.impl("avg_pool2d_backward.grad_input", TORCH_FN(avg_pool2d_backward_out));
  m.impl("_adaptive_avg_pool2d", TORCH_FN(adaptive_avg_pool2d));
  m.impl("_adaptive_avg_pool2d.out", TORCH_FN(adaptive_avg_pool2d_out));
  m.impl("_adaptive_avg_pool2d_backward", TORCH_FN(adaptive_avg_pool2d_backward));
  m.impl("_adaptive_avg_pool2d_backward.out", TORCH_FN(adaptive_avg_pool2d_backward_out));
  m.impl("adaptive_max_pool2d", TORCH_FN(adaptive_max_pool2d));
  m.impl("adaptive_max_pool2d.out", TORCH_FN(adaptive_max_pool2d_out));
  m.impl("adaptive_max_pool2d_backward", TORCH_FN(adaptive_max_pool2d_backward));
  m.impl("adaptive_max_pool2d_backward.grad_input", TORCH_FN(adaptive_max_pool2d_backward_out));

  // Interpolation (F.interpolate's modes; the .vec overloads are composites over these).
  m.impl("upsample_nearest1d", TORCH_FN(upsample_nearest1d));
  m.impl("upsample_nearest1d.out", TORCH_FN(upsample_nearest1d_out));
  m.impl("upsample_nearest1d_backward", TORCH_FN(upsample_nearest1d_backward));
  m.impl("upsample_nearest1d_backward.grad_input", TORCH_FN(upsample_nearest1d_backward_out));
  m.impl("upsample_nearest2d", TORCH_FN(upsample_nearest2d));
  m.impl("upsample_nearest2d.out", TORCH_FN(upsample_nearest2d_out));
  m.impl("upsample_nearest2d_backward", TORCH_FN(upsample_nearest2d_backward));
  m.impl("upsample_nearest2d_backward.grad_input", TORCH_FN(upsample_nearest2d_backward_out));
  m.impl("upsample_nearest3d", TORCH_FN(upsample_nearest3d));
  m.impl("upsample_nearest3d.out", TORCH_FN(upsample_nearest3d_out));
  m.impl("upsample_nearest3d_backward", TORCH_FN(upsample_nearest3d_backward));
  m.impl("upsample_nearest3d_backward.grad_input", TORCH_FN(upsample_nearest3d_backward_out));
  m.impl("_upsample_nearest_exact1d", TORCH_FN(upsample_nearest_exact1d));
  m.impl("_upsample_nearest_exact1d.out", TORCH_FN(upsample_nearest_exact1d_out));
  m.impl("_upsample_nearest_exact1d_backward", TORCH_FN(upsample_nearest_exact1d_backward));
  m.impl("_upsample_nearest_exact1d_backward.grad_input",
         TORCH_FN(upsample_nearest_exact1d_backward_out));
  m.impl("_upsample_nearest_exact2d", TORCH_FN(upsample_nearest_exact2d));
  m.impl("_upsample_nearest_exact2d.out", TORCH_FN(upsample_nearest_exact2d_out));
  m.impl("_upsample_nearest_exact2d_backward", TORCH_FN(upsample_nearest_exact2d_backward));
  m.impl("_upsample_nearest_exact2d_backward.grad_input",
         TORCH_FN(upsample_nearest_exact2d_backward_out));
  m.impl("_upsample_nearest_exact3d", TORCH_FN(upsample_nearest_exact3d));
  m.impl("_upsample_nearest_exact3d.out", TORCH_FN(upsample_nearest_exact3d_out));
  m.impl("_upsample_nearest_exact3d_backward", TORCH_FN(upsample_nearest_exact3d_backward));
  m.impl("_upsample_nearest_exact3d_backward.grad_input",
         TORCH_FN(upsample_nearest_exact3d_backward_out));
  m.impl("upsample_linear1d", TORCH_FN(upsample_linear1d));
  m.impl("upsample_linear1d.out", TORCH_FN(upsample_linear1d_out));
  m.impl("upsample_linear1d_backward", TORCH_FN(upsample_linear1d_backward));
  m.impl("upsample_linear1d_backward.grad_input", TORCH_FN(upsample_linear1d_backward_out));
  m.impl("upsample_bilinear2d", TORCH_FN(upsample_bilinear2d));
  m.impl("upsample_bilinear2d.out", TORCH_FN(upsample_bilinear2d_out));
  m.impl("upsample_bilinear2d_backward", TORCH_FN(upsample_bilinear2d_backward));
  m.impl("upsample_bilinear2d_backward.grad_input", TORCH_FN(upsample_bilinear2d_backward_out));
  m.impl("upsample_trilinear3d", TORCH_FN(upsample_trilinear3d));
  m.impl("upsample_trilinear3d.out", TORCH_FN(upsample_trilinear3d_out));
  m.impl("upsample_trilinear3d_backward", TORCH_FN(upsample_trilinear3d_backward));
  m.impl("upsample_trilinear3d_backward.grad_input", TORCH_FN(upsample_trilinear3d_backward_out));
  m.impl("upsample_bicubic2d", TORCH_FN(upsample_bicubic2d));
  m.impl("upsample_bicubic2d.out", TORCH_FN(upsample_bicubic2d_out));
  m.impl("upsample_bicubic2d_backward", TORCH_FN(upsample_bicubic2d_backward));
  m.impl("upsample_bicubic2d_backward.grad_input", TORCH_FN(upsample_bicubic2d_backward_out));

  // Normalisation.
  m.impl("native_batch_norm", TORCH_FN(native_batch_norm));
  m.impl("native_batch_norm_backward", TORCH_FN(native_batch_norm_backward));
  m.impl("_native_batch_norm_legit", TORCH_FN(native_batch_norm_legit));
  m.impl("_native_batch_norm_legit.no_stats", TORCH_FN(native_batch_norm_legit_no_stats));
  m.impl("_native_batch_norm_legit_no_training", TORCH_FN(native_batch_norm_legit_no_training));
  m.impl("native_group_norm", TORCH_FN(native_group_norm));
  m.impl("native_group_norm_backward", TORCH_FN(native_group_norm_backward));
  m.impl("native_layer_norm", TORCH_FN(native_layer_norm));
  m.impl("native_layer_norm_backward", TORCH_FN(native_layer_norm_backward));
  m.impl("_fused_rms_norm", TORCH_FN(fused_rms_norm));
  m.impl("_fused_rms_norm_backward", TORCH_FN(fused_rms_norm_backward));

  // Losses.
  m.impl("nll_loss_forward", TORCH_FN(nll_loss_forward));
  m.impl("nll_loss_forward.output", TORCH_FN(nll_loss_forward_out));
  m.impl("nll_loss_backward", TORCH_FN(nll_loss_backward));
  m.impl("nll_loss_backward.grad_input", TORCH_FN(nll_loss_backward_out));
  m.impl("nll_loss2d_forward", TORCH_FN(nll_loss2d_forward));
  m.impl("nll_loss2d_forward.output", TORCH_FN(nll_loss2d_forward_out));
  m.impl("nll_loss2d_backward", TORCH_FN(nll_loss2d_backward));
  m.impl("nll_loss2d_backward.grad_input", TORCH_FN(nll_loss2d_backward_out));
  m.impl("mse_loss", TORCH_FN(mse_loss));
  m.impl("mse_loss.out", TORCH_FN(mse_loss_out));
  m.impl("mse_loss_backward", TORCH_FN(mse_loss_backward));
  m.impl("mse_loss_backward.grad_input", TORCH_FN(mse_loss_backward_out));
  // Elementwise losses: Huber, smooth L1, binary cross-entropy.
  m.impl("huber_loss", TORCH_FN(huber_loss));
  m.impl("huber_loss.out", TORCH_FN(huber_loss_out));
  m.impl("huber_loss_backward", TORCH_FN(huber_loss_backward));
  m.impl("huber_loss_backward.out", TORCH_FN(huber_loss_backward_out));
  m.impl("smooth_l1_loss", TORCH_FN(smooth_l1_loss));
  m.impl("smooth_l1_loss.out", TORCH_FN(smooth_l1_loss_out));
  m.impl("smooth_l1_loss_backward", TORCH_FN(smooth_l1_loss_backward));
  m.impl("smooth_l1_loss_backward.grad_input", TORCH_FN(smooth_l1_loss_backward_out));
  m.impl("binary_cross_entropy", TORCH_FN(binary_cross_entropy));
  m.impl("binary_cross_entropy.out", TORCH_FN(binary_cross_entropy_out));
  m.impl("binary_cross_entropy_backward", TORCH_FN(binary_cross_entropy_backward));
  m.impl("binary_cross_entropy_backward.grad_input", TORCH_FN(binary_cross_entropy_backward_out));
  // 3-D pooling: max with indices, average, adaptive average.
  m.impl("max_pool3d_with_indices", TORCH_FN(max_pool3d_with_indices));
  m.impl("max_pool3d_with_indices.out", TORCH_FN(max_pool3d_with_indices_out));
  m.impl("max_pool3d_with_indices_backward", TORCH_FN(max_pool3d_with_indices_backward));
  m.impl("max_pool3d_with_indices_backward.grad_input",
         TORCH_FN(max_pool3d_with_indices_backward_out));
  m.impl("avg_pool3d", TORCH_FN(avg_pool3d));
  m.impl("avg_pool3d.out", TORCH_FN(avg_pool3d_out));
  m.impl("avg_pool3d_backward", TORCH_FN(avg_pool3d_backward));
  m.impl("avg_pool3d_backward.grad_input", TORCH_FN(avg_pool3d_backward_out));
  m.impl("_adaptive_avg_pool3d", TORCH_FN(adaptive_avg_pool3d));
  m.impl("adaptive_avg_pool3d.out", TORCH_FN(adaptive_avg_pool3d_out));
  m.impl("_adaptive_avg_pool3d_backward", TORCH_FN(adaptive_avg_pool3d_backward));
  // Multi-class margin loss.
  m.impl("multi_margin_loss", TORCH_FN(multi_margin_loss));
  m.impl("multi_margin_loss.out", TORCH_FN(multi_margin_loss_out));
  m.impl("multi_margin_loss_backward", TORCH_FN(multi_margin_loss_backward));
  m.impl("multi_margin_loss_backward.grad_input", TORCH_FN(multi_margin_loss_backward_out));

  // Reflection and replication padding (ops_padding.cpp).
  m.impl("reflection_pad1d", TORCH_FN(reflection_pad1d));
  m.impl("reflection_pad1d.out", TORCH_FN(reflection_pad1d_out));
  m.impl("reflection_pad1d_backward", TORCH_FN(reflection_pad1d_backward));
  m.impl("reflection_pad1d_backward.grad_input", TORCH_FN(reflection_pad1d_backward_out));
  m.impl("reflection_pad2d", TORCH_FN(reflection_pad2d));
  m.impl("reflection_pad2d.out", TORCH_FN(reflection_pad2d_out));
  m.impl("reflection_pad2d_backward", TORCH_FN(reflection_pad2d_backward));
  m.impl("reflection_pad2d_backward.grad_input", TORCH_FN(reflection_pad2d_backward_out));
  m.impl("reflection_pad3d", TORCH_FN(reflection_pad3d));
  m.impl("reflection_pad3d.out", TORCH_FN(reflection_pad3d_out));
  m.impl("reflection_pad3d_backward", TORCH_FN(reflection_pad3d_backward));
  m.impl("reflection_pad3d_backward.grad_input", TORCH_FN(reflection_pad3d_backward_out));
  m.impl("replication_pad1d", TORCH_FN(replication_pad1d));
  m.impl("replication_pad1d.out", TORCH_FN(replication_pad1d_out));
  m.impl("replication_pad1d_backward", TORCH_FN(replication_pad1d_backward));
  m.impl("replication_pad1d_backward.grad_input", TORCH_FN(replication_pad1d_backward_out));
  m.impl("replication_pad2d", TORCH_FN(replication_pad2d));
  m.impl("replication_pad2d.out", TORCH_FN(replication_pad2d_out));
  m.impl("replication_pad2d_backward", TORCH_FN(replication_pad2d_backward));
  m.impl("replication_pad2d_backward.grad_input", TORCH_FN(replication_pad2d_backward_out));
  m.impl("replication_pad3d", TORCH_FN(replication_pad3d));
  m.impl("replication_pad3d.out", TORCH_FN(replication_pad3d_out));
  m.impl("replication_pad3d_backward", TORCH_FN(replication_pad3d_backward));
  m.impl("replication_pad3d_backward.grad_input", TORCH_FN(replication_pad3d_backward_out));

  // Activations with more than one result or operand view (ops_activation.cpp).
  m.impl("log_sigmoid_forward", TORCH_FN(log_sigmoid_forward));
  m.impl("log_sigmoid_forward.output", TORCH_FN(log_sigmoid_forward_out));
  m.impl("log_sigmoid_backward", TORCH_FN(log_sigmoid_backward));
  m.impl("log_sigmoid_backward.grad_input", TORCH_FN(log_sigmoid_backward_out));
  m.impl("glu", TORCH_FN(glu));
  m.impl("glu.out", TORCH_FN(glu_out));
  m.impl("glu_backward", TORCH_FN(glu_backward));
  m.impl("glu_backward.grad_input", TORCH_FN(glu_backward_out));
  m.impl("_prelu_kernel_backward", TORCH_FN(prelu_kernel_backward));

  // Scaled dot-product attention (the PrivateUse1 "overrideable" SDPA backend).
  m.impl("_fused_sdp_choice", TORCH_FN(fused_sdp_choice));
  m.impl("_scaled_dot_product_fused_attention_overrideable", TORCH_FN(sdpa_overrideable));
  m.impl("_scaled_dot_product_fused_attention_overrideable_backward",
         TORCH_FN(sdpa_overrideable_backward));
}

// rms_norm is composite (pow/mean/rsqrt) unless a backend routes it: for neuron tensors of
// native dtypes it becomes _fused_rms_norm, whose derivative is _fused_rms_norm_backward.
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("rms_norm", TORCH_FN(rms_norm_autograd));
}

}  // namespace openneuron::bridge

// scaled_dot_product_attention asks this stub (not the _fused_sdp_choice op) which backend
// to use for a device type.
namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &openneuron::bridge::fused_sdp_choice)
}  // namespace at::native
