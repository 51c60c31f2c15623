// A 2-D view of a plain matrix buffer, as BLAS describes one (leading dimension, transposed).
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// [rows, cols] over `data`: row r starts ld elements after row r-1; when `transposed` the
// buffer holds the transpose (column c starts ld elements after column c-1).
inline TensorView matrix_view(void* data, DType dtype, int64_t rows, int64_t cols, int64_t ld,
                              bool transposed = false) {
  TensorView view;
  view.data = data;
  view.dtype = dtype;
  view.ndim = 2;
  view.sizes[0] = rows;
  view.sizes[1] = cols;
  view.strides[0] = transposed ? 1 : ld;
  view.strides[1] = transposed ? ld : 1;
  return view;
}

}  // namespace openneuron::kernels
