// torch._transformer_encoder_layer_fwd, the fast path of nn.TransformerEncoderLayer in eval:
// the layer written with the device's dense ops (linear, softmax, layer_norm), for a dense
// batch and for a nested batch (padded, run with a key padding mask, and re-nested: padding
// rows never reach a real row, so the real rows are the nested result).
#include <ATen/NestedTensorImpl.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/to_padded_tensor_native.h>
#include <torch/library.h>

#include <cmath>
#include <limits>

#include "aten/core/op_tracking.h"
#include "aten/nested/padded_rows.h"

namespace openneuron::bridge::nested {
namespace {

// The attention mask as booleans (true: not attended) that broadcast over [B, H, T, T]. The
// mask types are those of torch._native_multi_head_attention: 0 an attention mask [T, T],
// 1 a key padding mask [B, T], 2 a merged mask [B, H, T, T]. Float masks count as set where
// they are non-zero, as PyTorch's kernel reads them.
at::Tensor broadcastable_mask(const at::Tensor& mask, std::optional<int64_t> mask_type) {
  auto blocked = mask.scalar_type() == at::kBool ? mask : mask.to(at::kBool);
  if (blocked.dim() == 2 && mask_type.value_or(0) == 1) {
    return blocked.unsqueeze(1).unsqueeze(2);  // [B, 1, 1, T]
  }
  if (blocked.dim() == 2) {
    return blocked.unsqueeze(0).unsqueeze(0);  // [1, 1, T, T]
  }
  if (blocked.dim() == 3) {
    return blocked.unsqueeze(1);  // [B, 1, T, T]
  }
  TORCH_CHECK(blocked.dim() == 4, "attention mask must be 2-D, 3-D or 4-D, got ", mask.sizes());
  return blocked;
}

// Multi-head self-attention of x [B, T, E] with packed input projection, as
// torch._native_multi_head_attention computes it (queries scaled by 1/sqrt(head size)).
at::Tensor self_attention(const at::Tensor& x, int64_t num_heads, const at::Tensor& qkv_weight,
                          const at::Tensor& qkv_bias, const at::Tensor& proj_weight,
                          const at::Tensor& proj_bias, const std::optional<at::Tensor>& mask,
                          std::optional<int64_t> mask_type) {
  const int64_t batch = x.size(0), length = x.size(1), width = x.size(2);
  TORCH_CHECK(width % num_heads == 0, "embed_dim ", width, " is not divisible by num_heads ",
              num_heads);
  const int64_t head_size = width / num_heads;
  // [B, T, 3, H, D] -> [3, B, H, T, D]
  auto qkv = at::linear(x, qkv_weight, qkv_bias)
                 .view({batch, length, 3, num_heads, head_size})
                 .permute({2, 0, 3, 1, 4});
  auto queries = qkv.select(0, 0).div(std::sqrt(static_cast<double>(head_size)));
  auto scores = at::matmul(queries, qkv.select(0, 1).transpose(-2, -1));  // [B, H, T, T]
  at::Tensor weights;
  if (mask.has_value() && mask->defined()) {
    auto blocked = broadcastable_mask(*mask, mask_type);
    auto filled = scores.masked_fill(blocked, -std::numeric_limits<double>::infinity());
    // A row with every key masked gets zero weights, as PyTorch's masked softmax gives.
    weights = at::softmax(filled, -1).masked_fill(blocked, 0);
  } else {
    weights = at::softmax(scores, -1);
  }
  auto context =
      at::matmul(weights, qkv.select(0, 2)).transpose(1, 2).reshape({batch, length, width});
  return at::linear(context, proj_weight, proj_bias);
}

at::Tensor encoder_layer_dense(const at::Tensor& src, int64_t embed_dim, int64_t num_heads,
                               const at::Tensor& qkv_weight, const at::Tensor& qkv_bias,
                               const at::Tensor& proj_weight, const at::Tensor& proj_bias,
                               bool use_gelu, bool norm_first, double eps,
                               const at::Tensor& norm_weight_1, const at::Tensor& norm_bias_1,
                               const at::Tensor& norm_weight_2, const at::Tensor& norm_bias_2,
                               const at::Tensor& ffn_weight_1, const at::Tensor& ffn_bias_1,
                               const at::Tensor& ffn_weight_2, const at::Tensor& ffn_bias_2,
                               const std::optional<at::Tensor>& mask,
                               std::optional<int64_t> mask_type) {
  OPENNEURON_NATIVE_OP("aten::_transformer_encoder_layer_fwd");
  if (src.numel() == 0) {
    return src.clone();  // an empty batch is returned as it came, as PyTorch's kernel does
  }
  TORCH_CHECK(src.dim() == 3 && src.size(2) == embed_dim,
              "_transformer_encoder_layer_fwd: expected src [batch, length, ", embed_dim, "], got ",
              src.sizes());
  auto norm = [&](const at::Tensor& t, const at::Tensor& weight, const at::Tensor& bias) {
    return at::layer_norm(t, {embed_dim}, weight, bias, eps);
  };
  auto x = norm_first ? norm(src, norm_weight_1, norm_bias_1) : src;
  x = self_attention(x, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, mask, mask_type)
          .add(src);
  if (!norm_first) {
    x = norm(x, norm_weight_1, norm_bias_1);
  }
  auto residual = x;
  auto hidden =
      at::linear(norm_first ? norm(x, norm_weight_2, norm_bias_2) : x, ffn_weight_1, ffn_bias_1);
  hidden = use_gelu ? at::gelu(hidden) : at::relu(hidden);
  x = at::linear(hidden, ffn_weight_2, ffn_bias_2).add(residual);
  return norm_first ? x : norm(x, norm_weight_2, norm_bias_2);
}

at::Tensor encoder_layer_nested(const at::Tensor& src, int64_t embed_dim, int64_t num_heads,
                                const at::Tensor& qkv_weight, const at::Tensor& qkv_bias,
                                const at::Tensor& proj_weight, const at::Tensor& proj_bias,
                                bool use_gelu, bool norm_first, double eps,
                                const at::Tensor& norm_weight_1, const at::Tensor& norm_bias_1,
                                const at::Tensor& norm_weight_2, const at::Tensor& norm_bias_2,
                                const at::Tensor& ffn_weight_1, const at::Tensor& ffn_bias_1,
                                const at::Tensor& ffn_weight_2, const at::Tensor& ffn_bias_2,
                                const std::optional<at::Tensor>& mask,
                                std::optional<int64_t> mask_type) {
  TORCH_CHECK(!(mask.has_value() && mask->defined()),
              "_transformer_encoder_layer_fwd: a mask is not supported with a nested input (its "
              "sequences' lengths are the padding)");
  const auto* nested = at::native::get_nested_tensor_impl(src);
  if (nested->get_buffer().numel() == 0) {  // no values: returned as it came, as PyTorch does
    return at::detail::make_tensor<at::native::NestedTensorImpl>(nested->get_buffer(),
                                                                 nested->get_nested_sizes());
  }
  const auto lengths = sequence_lengths(src);
  auto padded = at::native::NestedTensor_to_padded_tensor_generic(src, 0, std::nullopt);
  auto key_padding = padding_mask(lengths, padded.size(1), padded.device());
  auto out = encoder_layer_dense(padded, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
                                 proj_bias, use_gelu, norm_first, eps, norm_weight_1, norm_bias_1,
                                 norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1, ffn_weight_2,
                                 ffn_bias_2, key_padding, /*mask_type=*/1);
  return nested_from_padded_rows(out, lengths);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_transformer_encoder_layer_fwd", TORCH_FN(encoder_layer_dense));
}

TORCH_LIBRARY_IMPL(aten, NestedTensorPrivateUse1, m) {
  m.impl("_transformer_encoder_layer_fwd", TORCH_FN(encoder_layer_nested));
}

}  // namespace openneuron::bridge::nested
