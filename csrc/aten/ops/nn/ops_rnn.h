// Fused recurrent cells of the neuron device (ATen's _thnn_fused_lstm_cell and
// _thnn_fused_gru_cell with their backwards), registered in register_rnn.cpp. nn.LSTM, nn.GRU,
// nn.LSTMCell and nn.GRUCell reach them for PrivateUse1 tensors after the gate matmuls.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace openneuron::bridge {

// Returns (hy, cy, workspace). fp32/bf16/fp16 run natively (workspace in fp32); float64
// runs on the host, composed of CPU ops (the CPU has no fused kernel).
std::tuple<at::Tensor, at::Tensor, at::Tensor> thnn_fused_lstm_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias);

// Returns (grad_gates, grad_cx, grad_bias); all undefined when grad_hy and grad_cy are.
std::tuple<at::Tensor, at::Tensor, at::Tensor> thnn_fused_lstm_cell_backward_impl(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx, const at::Tensor& cy, const at::Tensor& workspace, bool has_bias);

// Returns (hy, workspace).
std::tuple<at::Tensor, at::Tensor> thnn_fused_gru_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& hx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias);

// Returns (grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> thnn_fused_gru_cell_backward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias);

}  // namespace openneuron::bridge
