// Scaled dot-product attention on the device through PyTorch's PrivateUse1 hooks:
// _fused_sdp_choice picks the "overrideable" backend for native dtypes (math otherwise),
// and the overrideable forward/backward run the blocked attention kernels.
#include <ATen/ExpandUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/scalar_tensor.h>
#include <c10/core/DeviceGuard.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "aten/core/generator.h"
#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/ops/nn/nn_helpers.h"
#include "aten/ops/nn/ops_nn.h"
#include "kernels/attention/attention.h"

namespace openneuron::bridge {

namespace {

// PyTorch's sdp::SDPBackend values (torch.nn.attention.SDPBackend).
constexpr int64_t kSdpMath = 0;
constexpr int64_t kSdpOverrideable = 4;

double softmax_scale(const at::Tensor& query, std::optional<double> scale) {
  return scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
}

kernels::TensorView mask_view(const at::Tensor& mask, const at::Tensor& query,
                              const at::Tensor& key) {
  return broadcast_view(mask, {query.size(0), query.size(1), query.size(2), key.size(2)});
}

kernels::AttentionParams attention_params(const at::Tensor& query, std::optional<double> scale,
                                          bool is_causal, double dropout_p, uint64_t seed,
                                          uint64_t offset) {
  kernels::AttentionParams p;
  p.scale = softmax_scale(query, scale);
  p.is_causal = is_causal;
  p.dropout_p = dropout_p;
  p.seed = seed;
  p.offset = offset;
  return p;
}

uint64_t host_u64(const at::Tensor& t) {
  return t.defined() && t.numel() == 1 ? static_cast<uint64_t>(t.item<int64_t>()) : 0;
}

}  // namespace

int64_t fused_sdp_choice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                         const std::optional<at::Tensor>& attn_mask, double dropout_p,
                         bool is_causal, std::optional<double> scale, bool enable_gqa) {
  const at::Tensor* mask = nn::opt(attn_mask);
  // Symbolic sizes: comparing them guards on a relation, where size() would fix every size
  // (a graph traced with dynamic shapes would then be recompiled for each sequence length).
  auto size = [](const at::Tensor& t, int64_t d) { return t.sym_size(d); };
  const bool shapes_ok =
      query.dim() == 4 && key.dim() == 4 && value.dim() == 4 && size(key, 0) == size(query, 0) &&
      size(value, 0) == size(query, 0) && size(key, 1) == size(value, 1) &&
      size(key, 2) == size(value, 2) && size(key, 3) == size(query, 3) && size(key, 1) > 0 &&
      (size(key, 1) == size(query, 1) || (enable_gqa && size(query, 1) % size(key, 1) == 0));
  const bool dtypes_ok = nn::is_nn_dtype(query.scalar_type()) &&
                         key.scalar_type() == query.scalar_type() &&
                         value.scalar_type() == query.scalar_type() &&
                         (mask == nullptr || mask->scalar_type() == at::kBool ||
                          mask->scalar_type() == query.scalar_type());
  const bool layout_ok = !query.is_nested() && !key.is_nested() && !value.is_nested();
  return shapes_ok && dtypes_ok && layout_ok ? kSdpOverrideable : kSdpMath;
}

namespace {

// The forward output's layout, as the meta kernel (alloc_with_matching_layout): like query when
// the shapes agree, else query's dimension order (a (B, S, H, D)-major query gives a
// (B, S, H, D)-major output), so views the compiled graph takes of it stay valid.
at::Tensor output_like_query(const at::Tensor& query, at::IntArrayRef shape) {
  if (query.sizes().equals(shape)) return at::empty_like(query);
  std::array<int64_t, 4> order = {0, 1, 2, 3};
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return query.stride(a) > query.stride(b); });
  std::array<int64_t, 4> strides{};
  int64_t next = 1;
  for (int k = 3; k >= 0; --k) {
    strides[order[k]] = next;
    next *= shape[order[k]];
  }
  return at::empty_strided(shape, strides, query.options());
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt, c10::SymInt, at::Tensor,
           at::Tensor, at::Tensor>
sdpa_overrideable(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                  const std::optional<at::Tensor>& attn_bias, double dropout_p, bool is_causal,
                  bool return_debug_mask, std::optional<double> scale) {
  const at::Tensor* bias = nn::opt(attn_bias);
  const c10::Device device = nn::check_device(
      "aten::_scaled_dot_product_fused_attention_overrideable", {&query, &key, &value, bias});
  TORCH_CHECK(fused_sdp_choice(query, key, value, attn_bias, dropout_p, is_causal, scale,
                               /*enable_gqa=*/true) == kSdpOverrideable,
              "_scaled_dot_product_fused_attention_overrideable: unsupported inputs (query ",
              query.sizes(), " ", query.scalar_type(), ")");
  TORCH_CHECK(!return_debug_mask,
              "_scaled_dot_product_fused_attention_overrideable: "
              "return_debug_mask is not supported on neuron");
  TORCH_CHECK(dropout_p >= 0.0 && dropout_p < 1.0 + 1e-12, "dropout_p must be in [0, 1]");
  OPENNEURON_NATIVE_OP("aten::_scaled_dot_product_fused_attention_overrideable");
  const c10::DeviceGuard guard(device);
  const int64_t batch = query.size(0), heads = query.size(1), q_len = query.size(2);
  at::Tensor out = output_like_query(query, {batch, heads, q_len, value.size(3)});
  at::Tensor lse = at::empty({batch, heads, q_len}, query.options().dtype(at::kFloat));
  uint64_t seed = 0, offset = 0;
  if (dropout_p > 0.0) {
    std::tie(seed, offset) = resolve_generator(std::nullopt, device.index())
                                 ->reserve(kernels::attention_dropout_offset_increment(
                                     batch, heads, q_len, key.size(2)));
  }
  const at::TensorOptions host_int = at::TensorOptions().dtype(at::kLong).device(at::kCPU);
  at::Tensor philox_seed = at::scalar_tensor(static_cast<int64_t>(seed), host_int);
  at::Tensor philox_offset = at::scalar_tensor(static_cast<int64_t>(offset), host_int);
  at::Tensor empty_meta = at::empty({0}, query.options());
  if (out.numel() > 0 || lse.numel() > 0) {
    const kernels::AttentionParams params =
        attention_params(query, scale, is_causal, dropout_p, seed, offset);
    const kernels::TensorView out_view = view_of(out), lse_view = view_of(lse);
    const kernels::TensorView q_view = view_of(query), k_view = view_of(key),
                              v_view = view_of(value);
    const bool has_mask = bias != nullptr;
    const kernels::TensorView m_view =
        has_mask ? mask_view(*bias, query, key) : kernels::TensorView{};
    stream_for(out).enqueue("aten::_scaled_dot_product_fused_attention_overrideable", [=] {
      kernels::attention_forward(out_view, lse_view, q_view, k_view, v_view,
                                 has_mask ? &m_view : nullptr, params);
    });
  }
  return {out,
          lse,
          empty_meta,
          empty_meta,
          c10::SymInt(q_len),
          c10::SymInt(key.size(2)),
          philox_seed,
          philox_offset,
          empty_meta};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> sdpa_overrideable_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key,
    const at::Tensor& value, const at::Tensor& attn_bias, std::array<bool, 4> grad_input_mask,
    const at::Tensor& out, const at::Tensor& logsumexp, const at::Tensor& cum_seq_q,
    const at::Tensor& cum_seq_k, int64_t max_q, int64_t max_k, double dropout_p, bool is_causal,
    const at::Tensor& philox_seed, const at::Tensor& philox_offset, std::optional<double> scale) {
  const at::Tensor* bias = attn_bias.defined() ? &attn_bias : nullptr;
  const c10::Device device =
      nn::check_device("aten::_scaled_dot_product_fused_attention_overrideable_backward",
                       {&grad_out, &query, &key, &value, bias, &out, &logsumexp});
  TORCH_CHECK(nn::all_nn_dtypes({&grad_out, &query, &key, &value, &out}),
              "_scaled_dot_product_fused_attention_overrideable_backward: unsupported dtype ",
              query.scalar_type());
  OPENNEURON_NATIVE_OP("aten::_scaled_dot_product_fused_attention_overrideable_backward");
  const c10::DeviceGuard guard(device);
  at::Tensor grad_q, grad_k, grad_v, grad_bias;
  // Laid out like the inputs, as the meta kernel's empty_like.
  if (grad_input_mask[0]) grad_q = at::empty_like(query);
  if (grad_input_mask[1]) grad_k = at::empty_like(key);
  if (grad_input_mask[2]) grad_v = at::empty_like(value);
  const bool want_bias = grad_input_mask[3] && bias != nullptr && bias->is_floating_point();
  if (want_bias) {
    const std::array<int64_t, 4> full = {query.size(0), query.size(1), query.size(2), key.size(2)};
    // A broadcast bias's gradient is a sum over the broadcast dims: kept in fp32 until then,
    // so a 16-bit result is rounded once.
    grad_bias = bias->sizes().equals(full) ? at::empty_like(*bias)
                                           : at::empty(full, query.options().dtype(at::kFloat));
  }
  const kernels::AttentionParams params = attention_params(
      query, scale, is_causal, dropout_p, host_u64(philox_seed), host_u64(philox_offset));
  const kernels::TensorView gq = grad_q.defined() ? view_of(grad_q) : kernels::TensorView{};
  const kernels::TensorView gk = grad_k.defined() ? view_of(grad_k) : kernels::TensorView{};
  const kernels::TensorView gv = grad_v.defined() ? view_of(grad_v) : kernels::TensorView{};
  const kernels::TensorView gb = want_bias ? view_of(grad_bias) : kernels::TensorView{};
  // The kernel reads grad_out and out in the inputs' dtype (autograd gives them that dtype;
  // converting covers any caller that does not).
  const at::Tensor grad_out_same =
      grad_out.scalar_type() == query.scalar_type() ? grad_out : grad_out.to(query.scalar_type());
  const at::Tensor out_same =
      out.scalar_type() == query.scalar_type() ? out : out.to(query.scalar_type());
  const kernels::TensorView go_view = view_of(grad_out_same), q_view = view_of(query),
                            k_view = view_of(key), v_view = view_of(value),
                            out_view = view_of(out_same), lse_view = view_of(logsumexp);
  const bool has_mask = bias != nullptr;
  const kernels::TensorView m_view =
      has_mask ? mask_view(*bias, query, key) : kernels::TensorView{};
  const bool wq = grad_q.defined(), wk = grad_k.defined(), wv = grad_v.defined();
  stream_for(query).enqueue("aten::_scaled_dot_product_fused_attention_overrideable_backward", [=] {
    kernels::attention_backward(wq ? &gq : nullptr, wk ? &gk : nullptr, wv ? &gv : nullptr,
                                want_bias ? &gb : nullptr, go_view, q_view, k_view, v_view,
                                out_view, lse_view, has_mask ? &m_view : nullptr, params);
  });
  // A broadcast bias (e.g. (1, H, S, S) for a batch) gets its gradient in its own shape, as
  // the meta kernel promises (a traced graph squeezes or views it by that shape).
  if (want_bias && !grad_bias.sizes().equals(bias->sizes())) {
    grad_bias = at::sum_to(grad_bias, bias->sizes()).to(bias->scalar_type());
  }
  return {grad_q, grad_k, grad_v, grad_bias};
}

}  // namespace openneuron::bridge
