// A torch-free description of a strided tensor in device memory, as kernels see it.
#pragma once

#include <cstdint>

#include "kernels/core/dtype.h"

namespace openneuron::kernels {

constexpr int kMaxDims = 64;

// `data` points at element [0, ..., 0] (storage offset already applied); sizes and
// strides are in elements. A stride of 0 expresses broadcasting.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::Float32;
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }
  // True when elements are dense and in row-major order (ignoring size-1 dims).
  bool is_contiguous() const {
    int64_t expected = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      if (sizes[d] == 1) continue;
      if (strides[d] != expected) return false;
      expected *= sizes[d];
    }
    return true;
  }
};

}  // namespace openneuron::kernels
