// Views of one group of a grouped product (an expert's tokens and weights), shared by the
// grouped and the scaled grouped GEMMs.
#pragma once

#include <cstdint>

#include "kernels/core/dtype.h"
#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// Entry `index` of the leading dimension, as a view of one dimension less.
inline TensorView select_first(const TensorView& view, int64_t index) {
  TensorView part;
  part.data = static_cast<char*>(view.data) +
              index * view.strides[0] * static_cast<int64_t>(element_size(view.dtype));
  part.dtype = view.dtype;
  part.ndim = view.ndim - 1;
  for (int d = 0; d < part.ndim; ++d) {
    part.sizes[d] = view.sizes[d + 1];
    part.strides[d] = view.strides[d + 1];
  }
  return part;
}

// Where group `group` ends: entry `group` of the int32 offsets (unclamped).
inline int64_t group_end(const TensorView& offsets, int64_t group) {
  return static_cast<const int32_t*>(offsets.data)[group * offsets.strides[0]];
}

}  // namespace openneuron::kernels
