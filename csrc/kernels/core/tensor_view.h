// A torch-free description of a strided tensor in device memory, as kernels see it.
#pragma once

#include <cstdint>

#include "kernels/core/dtype.h"

namespace openneuron::kernels {

constexpr int kMaxDims = 64;

// `data` points at element [0, ..., 0] (storage offset already applied); sizes and
// strides are in elements. A stride of 0 expresses broadcasting. Only the first `ndim`
// entries of sizes and strides are meaningful: the rest are unspecified, so that building
// and copying a view, done several times per op, moves ndim dims rather than all 64.
// Sanitized builds fill the rest with a poison value so that a read beyond ndim faults.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::Float32;
  int ndim = 0;
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims];

  TensorView() { poison_from(0); }
  TensorView(const TensorView& other) noexcept
      : data(other.data), dtype(other.dtype), ndim(other.ndim) {
    copy_dims(other);
  }
  TensorView& operator=(const TensorView& other) noexcept {
    data = other.data;
    dtype = other.dtype;
    ndim = other.ndim;
    copy_dims(other);
    return *this;
  }

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

 private:
  void copy_dims(const TensorView& other) {
    for (int d = 0; d < ndim; ++d) {
      sizes[d] = other.sizes[d];
      strides[d] = other.strides[d];
    }
    poison_from(ndim);
  }
  void poison_from([[maybe_unused]] int first) {
#ifdef OPENNEURON_POISON_VIEW_TAILS
    for (int d = first < 0 ? 0 : first; d < kMaxDims; ++d) {
      sizes[d] = int64_t{1} << 60;
      strides[d] = int64_t{1} << 60;
    }
#endif
  }
};

}  // namespace openneuron::kernels
