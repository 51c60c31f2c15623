// Fused recurrent cells: the pointwise part of one LSTM / GRU step (gate activations and state
// update) after the gate matrix products, forward and backward. These are the kernels behind
// ATen's _thnn_fused_lstm_cell / _thnn_fused_gru_cell, which nn.LSTM, nn.GRU and their Cell
// modules call for device tensors.
//
// Views are 2-D [B, k*H] (gates, workspaces) or [B, H] (states), any strides and any floating
// dtype; biases are 1-D [k*H]. Math runs in fp32 for fp32/bf16/fp16 (double for float64) and
// each output is rounded once on store. Gate order within a row follows PyTorch:
// LSTM [input, forget, cell, output]; GRU [reset, update, new].
#pragma once

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// gates = (input_gates + input_bias) + (hidden_gates + hidden_bias), chunked in 4;
// i, f, o = sigmoid, g = tanh; cy = f * cx + i * g; hy = o * tanh(cy).
// workspace [B, 4H] receives the activated gates [i, f, g, o]. Biases may be null (both or none).
void lstm_cell_forward(const TensorView& hy, const TensorView& cy, const TensorView& workspace,
                       const TensorView& input_gates, const TensorView& hidden_gates,
                       const TensorView& cx, const TensorView* input_bias,
                       const TensorView* hidden_bias);

// Gradients of lstm_cell_forward from grad_hy / grad_cy (either may be null: zero).
// grad_gates [B, 4H] is the gradient of the pre-activation gates; grad_cx [B, H].
void lstm_cell_backward(const TensorView& grad_gates, const TensorView& grad_cx,
                        const TensorView* grad_hy, const TensorView* grad_cy, const TensorView& cx,
                        const TensorView& cy, const TensorView& workspace);

// r = sigmoid(ir + br_i + hr + br_h), z = sigmoid(iz + bz_i + hz + bz_h),
// n = tanh(in + bn_i + r * (hn + bn_h)); hy = n + z * (hx - n).
// workspace [B, 5H] receives [r, z, n, hn + bn_h, hx]. Biases may be null (both or none).
void gru_cell_forward(const TensorView& hy, const TensorView& workspace,
                      const TensorView& input_gates, const TensorView& hidden_gates,
                      const TensorView& hx, const TensorView* input_bias,
                      const TensorView* hidden_bias);

// Gradients of gru_cell_forward: grad_input_gates and grad_hidden_gates [B, 3H] (they differ
// only in the new-gate chunk), grad_hx [B, H].
void gru_cell_backward(const TensorView& grad_input_gates, const TensorView& grad_hidden_gates,
                       const TensorView& grad_hx, const TensorView& grad_hy,
                       const TensorView& workspace);

}  // namespace openneuron::kernels
