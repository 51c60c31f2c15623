// Reflection and replication padding (PyTorch's ReflectionPad1d/2d/3d, ReplicationPad1d/2d/3d),
// forward and backward, over the last 1-3 dims of a tensor.
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

enum class PadMode : uint8_t {
  Reflect,    // the edge is the mirror: [a b c] padded by 2 -> [c b a b c b a]
  Replicate,  // the edge repeats: [a b c] padded by 2 -> [a a a b c c c]
};

// How much each padded dim grows at its start and end; dims[k] is the k-th padded dim counted
// from the first of the last `spatial_dims` dims. Negative amounts crop.
struct PadAmounts {
  int spatial_dims = 1;  // 1, 2 or 3
  int64_t before[3] = {0, 0, 0};
  int64_t after[3] = {0, 0, 0};
};

// out = pad(input): out and input have the same ndim (spatial_dims plus at most two leading
// dims, sizes equal there) and dtype (any); out's padded sizes are input's plus before + after.
// Reflection needs every amount below the input's size in its dim. Any strides. Throws
// std::invalid_argument for views that do not fit these rules.
void pad_forward(PadMode mode, const TensorView& out, const TensorView& input,
                 const PadAmounts& amounts);

// grad_input = the gradient of pad_forward: each grad_input element sums the grad_out elements
// it was copied to, in fp32 (float64 in double), rounded once. Floating dtypes.
void pad_backward(PadMode mode, const TensorView& grad_input, const TensorView& grad_out,
                  const PadAmounts& amounts);

}  // namespace openneuron::kernels
