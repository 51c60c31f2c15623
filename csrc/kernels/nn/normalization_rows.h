// Private fast path of the layer/RMS norm kernels (normalization.h's row_norm_*): rows whose
// elements are contiguous, one dtype (float32/bfloat16/float16) for the row tensors. Each
// row is widened once into a per-thread fp32 buffer, reduced in double lanes and written
// back with one rounding, in parallel over rows; no whole-tensor working copies.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels::normalization_rows {

#include "kernels/nn/normalization_rows_entry_points.h"  // contracts there

}  // namespace openneuron::kernels::normalization_rows
