// Registrations of the recurrent-cell family (the .out variants are ATen's generated
// composites over these).
#include <torch/library.h>

#include "aten/ops/nn/ops_rnn.h"

namespace openneuron::bridge {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(thnn_fused_lstm_cell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(thnn_fused_lstm_cell_backward_impl));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(thnn_fused_gru_cell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(thnn_fused_gru_cell_backward));
}

}  // namespace openneuron::bridge
