// Scaled dot-product attention, forward and backward, flash-style: blocks of query rows
// against blocks of keys with an online softmax in fp32 (16-bit inputs are widened per block
// and results rounded once on store). The backward recomputes the probabilities per block
// from the saved logsumexp. Both run in parallel over blocks/heads with parallel_for.
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

struct AttentionParams {
  double scale = 1.0;
  bool is_causal = false;  // query i attends keys j <= i (top-left aligned, as PyTorch)
  double dropout_p = 0.0;  // drop probability; kept weights are scaled by 1 / (1 - p)
  uint64_t seed = 0;       // Philox key and counter offset of the dropout draws
  uint64_t offset = 0;
};

#include "kernels/attention/attention_entry_points.h"  // contracts there

}  // namespace openneuron::kernels
