// Fused LSTM / GRU cells on the device: gate activations and state update after the gate
// matrix products (which run as ordinary matmuls), forward and backward.
#include "aten/ops/nn/ops_rnn.h"

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>

#include <string>
#include <utility>

#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/nn/nn_helpers.h"
#include "kernels/nn/rnn.h"

namespace openneuron::bridge {

namespace {

using nn::opt;

// The argument checks of PyTorch's fused cells (CUDA's checkSizes): 2-D gates of equal size,
// 1-D biases of the gates' width, a previous state of B * width / gate_count elements, one
// dtype and one device.
void check_cell_arguments(const char* name, const at::Tensor& input_gates,
                          const at::Tensor& hidden_gates, const at::Tensor& prev_state,
                          const at::Tensor* input_bias, const at::Tensor* hidden_bias,
                          int64_t gate_count) {
  nn::check_device(name, {&input_gates, &hidden_gates, &prev_state, input_bias, hidden_bias});
  TORCH_CHECK(input_gates.dim() == 2, "Expected 2-dimensional tensor, but got ", input_gates.dim(),
              "-dimensional tensor for argument #1 'input_gates' (while "
              "checking arguments for ",
              name, ")");
  TORCH_CHECK(input_gates.sizes() == hidden_gates.sizes(),
              "Expected tensor for argument #1 "
              "'input_gates' to have same size as tensor for argument #2 'hidden_gates'; but ",
              input_gates.sizes(), " does not equal ", hidden_gates.sizes(),
              " (while checking "
              "arguments for ",
              name, ")");
  const int64_t width = input_gates.size(1);
  TORCH_CHECK(width % gate_count == 0, name, ": the gates' width ", width, " is not a multiple of ",
              gate_count);
  TORCH_CHECK((input_bias == nullptr) == (hidden_bias == nullptr), name,
              ": input_bias and hidden_bias must both be given or both be None");
  if (input_bias != nullptr) {
    TORCH_CHECK(input_bias->dim() == 1 && input_bias->numel() == width, name,
                ": expected input_bias of shape [", width, "], got ", input_bias->sizes());
    TORCH_CHECK(hidden_bias->sizes() == input_bias->sizes(), name,
                ": expected hidden_bias of shape [", width, "], got ", hidden_bias->sizes());
  }
  TORCH_CHECK(prev_state.numel() == input_gates.size(0) * width / gate_count,
              "Expected tensor "
              "for argument #3 to have ",
              input_gates.size(0) * width / gate_count, " elements; but it actually has ",
              prev_state.numel(),
              " elements (while checking "
              "arguments for ",
              name, ")");
  for (const at::Tensor* t : {&hidden_gates, &prev_state, input_bias, hidden_bias}) {
    if (t == nullptr) continue;
    TORCH_CHECK(t->scalar_type() == input_gates.scalar_type(), name,
                ": expected all tensors "
                "to have dtype ",
                input_gates.scalar_type(), ", got ", t->scalar_type());
  }
  TORCH_CHECK(at::isFloatingType(input_gates.scalar_type()), "\"", name, "\" not implemented for '",
              at::toString(input_gates.scalar_type()), "'");
}

// float64 runs on the host, visibly (counted, strict mode refuses), like host_fallback; the
// CPU has no fused cell kernels, so the host path composes CPU ops.
void enter_host_path(const char* name) {
  TORCH_CHECK_NOT_IMPLEMENTED(!strict_mode(), "neuron: ", name,
                              " has no native kernel and OPENNEURON_STRICT=1 forbids running it "
                              "on the host (CPU fallback)");
  if (record_fallback(name)) {
    TORCH_WARN("neuron: ", name,
               " has no native kernel for these inputs and runs on the host "
               "(CPU fallback); counted in openneuron.get_fallback_ops(). Set OPENNEURON_STRICT=1 "
               "to make this an error.");
  }
}

at::Tensor rows_of(const at::Tensor& t, int64_t rows, int64_t cols) {
  return t.reshape({rows, cols});
}

// The input and hidden gate pre-activations on the host, each with its bias added if given.
std::pair<at::Tensor, at::Tensor> host_gates(const at::Tensor& input_gates,
                                             const at::Tensor& hidden_gates,
                                             const at::Tensor* bias_i, const at::Tensor* bias_h) {
  at::Tensor gates = input_gates.cpu();
  at::Tensor hgates = hidden_gates.cpu();
  if (bias_i != nullptr) {
    gates = gates + bias_i->cpu();
    hgates = hgates + bias_h->cpu();
  }
  return {gates, hgates};
}

// 16-bit gradients are computed into fp32 and rounded once, after the bias sum.
bool is_narrow(at::ScalarType type) { return type == at::kBFloat16 || type == at::kHalf; }

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> thnn_fused_lstm_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  constexpr const char* kName = "aten::_thnn_fused_lstm_cell";
  const at::Tensor* bias_i = opt(input_bias);
  const at::Tensor* bias_h = opt(hidden_bias);
  check_cell_arguments(kName, input_gates, hidden_gates, cx, bias_i, bias_h, 4);
  const c10::DeviceGuard guard(input_gates.device());
  const int64_t batch = input_gates.size(0);
  const int64_t hidden = input_gates.size(1) / 4;

  if (!nn::is_nn_dtype(input_gates.scalar_type())) {
    enter_host_path(kName);
    const auto [gates, hgates] = host_gates(input_gates, hidden_gates, bias_i, bias_h);
    const auto chunks = (gates + hgates).chunk(4, 1);
    const at::Tensor in = chunks[0].sigmoid(), forget = chunks[1].sigmoid(),
                     cell = chunks[2].tanh(), out = chunks[3].sigmoid();
    const at::Tensor c_prev = rows_of(cx.cpu(), batch, hidden);
    const at::Tensor cy = forget * c_prev + in * cell;
    const at::Tensor hy = out * cy.tanh();
    const at::Tensor workspace = at::cat({in, forget, cell, out}, 1);
    const c10::Device device = input_gates.device();
    return {hy.view(cx.sizes()).to(device), cy.view(cx.sizes()).to(device), workspace.to(device)};
  }

  OPENNEURON_NATIVE_OP("aten::_thnn_fused_lstm_cell");
  at::Tensor hy = at::empty(cx.sizes(), cx.options());
  at::Tensor cy = at::empty(cx.sizes(), cx.options());
  at::Tensor workspace = at::empty({batch, 4 * hidden}, input_gates.options().dtype(at::kFloat));
  const kernels::TensorView hy_v = view_of(hy.view({batch, hidden}));
  const kernels::TensorView cy_v = view_of(cy.view({batch, hidden}));
  const kernels::TensorView ws_v = view_of(workspace);
  const kernels::TensorView ig_v = view_of(input_gates), hg_v = view_of(hidden_gates);
  const kernels::TensorView cx_v = view_of(rows_of(cx, batch, hidden));
  const bool has_bias = bias_i != nullptr;
  const kernels::TensorView bi_v = has_bias ? view_of(*bias_i) : kernels::TensorView{};
  const kernels::TensorView bh_v = has_bias ? view_of(*bias_h) : kernels::TensorView{};
  stream_for(hy).enqueue(kName, [=] {
    kernels::lstm_cell_forward(hy_v, cy_v, ws_v, ig_v, hg_v, cx_v, has_bias ? &bi_v : nullptr,
                               has_bias ? &bh_v : nullptr);
  });
  return {hy, cy, workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> thnn_fused_lstm_cell_backward_impl(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx, const at::Tensor& cy, const at::Tensor& workspace, bool has_bias) {
  constexpr const char* kName = "aten::_thnn_fused_lstm_cell_backward_impl";
  const at::Tensor* gh = opt(grad_hy);
  const at::Tensor* gc = opt(grad_cy);
  if (gh == nullptr && gc == nullptr) return {};
  nn::check_device(kName, {gh, gc, &cx, &cy, &workspace});
  TORCH_CHECK(workspace.dim() == 2 && workspace.size(1) % 4 == 0, kName,
              ": expected a [B, 4H] workspace, got ", workspace.sizes());
  const int64_t batch = workspace.size(0);
  const int64_t hidden = workspace.size(1) / 4;
  for (const at::Tensor* t : {gh, gc, &cx, &cy}) {
    if (t == nullptr) continue;
    TORCH_CHECK(t->numel() == batch * hidden, kName, ": expected ", batch * hidden,
                " elements, got a tensor of shape ", t->sizes());
  }
  const c10::DeviceGuard guard(cx.device());
  const at::ScalarType dtype = cx.scalar_type();

  if (!nn::is_nn_dtype(dtype)) {
    enter_host_path(kName);
    const auto act = workspace.cpu().to(dtype).chunk(4, 1);
    const at::Tensor& in = act[0];
    const at::Tensor& forget = act[1];
    const at::Tensor& cell = act[2];
    const at::Tensor& out = act[3];
    const at::Tensor c_prev = rows_of(cx.cpu(), batch, hidden);
    const at::Tensor tanh_c = rows_of(cy.cpu(), batch, hidden).tanh();
    const at::Tensor g_h =
        gh != nullptr ? rows_of(gh->cpu(), batch, hidden) : at::zeros_like(c_prev);
    const at::Tensor g_c =
        gc != nullptr ? rows_of(gc->cpu(), batch, hidden) : at::zeros_like(c_prev);
    const at::Tensor d_c = g_h * out * (1 - tanh_c * tanh_c) + g_c;
    const at::Tensor grad_gates =
        at::cat({d_c * cell * (1 - in) * in, d_c * c_prev * (1 - forget) * forget,
                 d_c * in * (1 - cell * cell), g_h * tanh_c * (1 - out) * out},
                1);
    const at::Tensor grad_cx = (d_c * forget).view(cx.sizes());
    const c10::Device device = cx.device();
    return {grad_gates.to(device), grad_cx.to(device),
            has_bias ? grad_gates.sum(0).to(device) : at::Tensor()};
  }

  OPENNEURON_NATIVE_OP("aten::_thnn_fused_lstm_cell_backward_impl");
  const at::ScalarType compute = is_narrow(dtype) ? at::kFloat : dtype;
  at::Tensor grad_gates = at::empty({batch, 4 * hidden}, cx.options().dtype(compute));
  at::Tensor grad_cx = at::empty(cx.sizes(), cx.options());
  const kernels::TensorView gg_v = view_of(grad_gates);
  const kernels::TensorView gcx_v = view_of(grad_cx.view({batch, hidden}));
  const kernels::TensorView gh_v =
      gh != nullptr ? view_of(rows_of(*gh, batch, hidden)) : kernels::TensorView{};
  const kernels::TensorView gc_v =
      gc != nullptr ? view_of(rows_of(*gc, batch, hidden)) : kernels::TensorView{};
  const kernels::TensorView cx_v = view_of(rows_of(cx, batch, hidden));
  const kernels::TensorView cy_v = view_of(rows_of(cy, batch, hidden));
  const kernels::TensorView ws_v = view_of(workspace);
  const bool has_gh = gh != nullptr, has_gc = gc != nullptr;
  stream_for(grad_cx).enqueue(kName, [=] {
    kernels::lstm_cell_backward(gg_v, gcx_v, has_gh ? &gh_v : nullptr, has_gc ? &gc_v : nullptr,
                                cx_v, cy_v, ws_v);
  });
  at::Tensor grad_bias = has_bias ? at::sum(grad_gates, 0).to(dtype) : at::Tensor();
  return {grad_gates.to(dtype), grad_cx, grad_bias};
}

std::tuple<at::Tensor, at::Tensor> thnn_fused_gru_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& hx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  constexpr const char* kName = "aten::_thnn_fused_gru_cell";
  const at::Tensor* bias_i = opt(input_bias);
  const at::Tensor* bias_h = opt(hidden_bias);
  check_cell_arguments(kName, input_gates, hidden_gates, hx, bias_i, bias_h, 3);
  const c10::DeviceGuard guard(input_gates.device());
  const int64_t batch = input_gates.size(0);
  const int64_t hidden = input_gates.size(1) / 3;

  if (!nn::is_nn_dtype(input_gates.scalar_type())) {
    enter_host_path(kName);
    const auto [gates, hgates] = host_gates(input_gates, hidden_gates, bias_i, bias_h);
    const auto in = gates.chunk(3, 1);
    const auto hid = hgates.chunk(3, 1);
    const at::Tensor reset = (in[0] + hid[0]).sigmoid();
    const at::Tensor update = (in[1] + hid[1]).sigmoid();
    const at::Tensor candidate = (in[2] + reset * hid[2]).tanh();
    const at::Tensor h_prev = rows_of(hx.cpu(), batch, hidden);
    const at::Tensor hy = candidate + update * (h_prev - candidate);
    const at::Tensor workspace = at::cat({reset, update, candidate, hid[2], h_prev}, 1);
    const c10::Device device = input_gates.device();
    return {hy.view(hx.sizes()).to(device), workspace.to(device)};
  }

  OPENNEURON_NATIVE_OP("aten::_thnn_fused_gru_cell");
  at::Tensor hy = at::empty(hx.sizes(), hx.options());
  at::Tensor workspace = at::empty({batch, 5 * hidden}, input_gates.options().dtype(at::kFloat));
  const kernels::TensorView hy_v = view_of(hy.view({batch, hidden}));
  const kernels::TensorView ws_v = view_of(workspace);
  const kernels::TensorView ig_v = view_of(input_gates), hg_v = view_of(hidden_gates);
  const kernels::TensorView hx_v = view_of(rows_of(hx, batch, hidden));
  const bool has_bias = bias_i != nullptr;
  const kernels::TensorView bi_v = has_bias ? view_of(*bias_i) : kernels::TensorView{};
  const kernels::TensorView bh_v = has_bias ? view_of(*bias_h) : kernels::TensorView{};
  stream_for(hy).enqueue(kName, [=] {
    kernels::gru_cell_forward(hy_v, ws_v, ig_v, hg_v, hx_v, has_bias ? &bi_v : nullptr,
                              has_bias ? &bh_v : nullptr);
  });
  return {hy, workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> thnn_fused_gru_cell_backward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  constexpr const char* kName = "aten::_thnn_fused_gru_cell_backward";
  nn::check_device(kName, {&grad_hy, &workspace});
  TORCH_CHECK(workspace.dim() == 2 && workspace.size(1) % 5 == 0, kName,
              ": expected a [B, 5H] workspace, got ", workspace.sizes());
  const int64_t batch = workspace.size(0);
  const int64_t hidden = workspace.size(1) / 5;
  TORCH_CHECK(grad_hy.numel() == batch * hidden, kName, ": expected ", batch * hidden,
              " elements in grad_hy, got shape ", grad_hy.sizes());
  const c10::DeviceGuard guard(grad_hy.device());
  const at::ScalarType dtype = grad_hy.scalar_type();

  if (!nn::is_nn_dtype(dtype)) {
    enter_host_path(kName);
    const auto saved = workspace.cpu().to(dtype).chunk(5, 1);
    const at::Tensor& reset = saved[0];
    const at::Tensor& update = saved[1];
    const at::Tensor& candidate = saved[2];
    const at::Tensor& hn = saved[3];
    const at::Tensor& h_prev = saved[4];
    const at::Tensor go = rows_of(grad_hy.cpu(), batch, hidden);
    const at::Tensor d_update = go * (h_prev - candidate) * (1 - update) * update;
    const at::Tensor d_candidate = go * (1 - update) * (1 - candidate * candidate);
    const at::Tensor d_reset = d_candidate * hn * (1 - reset) * reset;
    const at::Tensor grad_input_gates = at::cat({d_reset, d_update, d_candidate}, 1);
    const at::Tensor grad_hidden_gates = at::cat({d_reset, d_update, d_candidate * reset}, 1);
    const at::Tensor grad_hx = go * update;
    const c10::Device device = grad_hy.device();
    return {grad_input_gates.to(device), grad_hidden_gates.to(device), grad_hx.to(device),
            has_bias ? grad_input_gates.sum(0).to(device) : at::Tensor(),
            has_bias ? grad_hidden_gates.sum(0).to(device) : at::Tensor()};
  }

  OPENNEURON_NATIVE_OP("aten::_thnn_fused_gru_cell_backward");
  const at::ScalarType compute = is_narrow(dtype) ? at::kFloat : dtype;
  at::Tensor grad_input_gates = at::empty({batch, 3 * hidden}, grad_hy.options().dtype(compute));
  at::Tensor grad_hidden_gates = at::empty({batch, 3 * hidden}, grad_hy.options().dtype(compute));
  at::Tensor grad_hx = at::empty({batch, hidden}, grad_hy.options());
  const kernels::TensorView gi_v = view_of(grad_input_gates), gh_v = view_of(grad_hidden_gates);
  const kernels::TensorView ghx_v = view_of(grad_hx);
  const kernels::TensorView go_v = view_of(rows_of(grad_hy, batch, hidden));
  const kernels::TensorView ws_v = view_of(workspace);
  stream_for(grad_hx).enqueue(kName,
                              [=] { kernels::gru_cell_backward(gi_v, gh_v, ghx_v, go_v, ws_v); });
  at::Tensor grad_input_bias, grad_hidden_bias;
  if (has_bias) {
    grad_input_bias = at::sum(grad_input_gates, 0).to(dtype);
    grad_hidden_bias = at::sum(grad_hidden_gates, 0).to(dtype);
  }
  return {grad_input_gates.to(dtype), grad_hidden_gates.to(dtype), grad_hx, grad_input_bias,
          grad_hidden_bias};
}

}  // namespace openneuron::bridge
