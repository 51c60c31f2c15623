// A tensor view as adaptive eager records it: the fields of kernels::TensorView for at most
// kMaxRecordedDims dims, so that a recorded op stays small to copy (kernels::TensorView holds
// every dim PyTorch allows). Ops on tensors with more dims are not recorded: they run eagerly.
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::adaptive {

constexpr int kMaxRecordedDims = 8;

struct RecordedView {
  void* data = nullptr;
  kernels::DType dtype = kernels::DType::Float32;
  int ndim = 0;
  // Only the first `ndim` entries are meaningful: left uninitialised past them, so that
  // recording an op does not zero what it never reads.
  int64_t sizes[kMaxRecordedDims];
  int64_t strides[kMaxRecordedDims];

  // True when `view` has few enough dims to be recorded.
  static bool fits(const kernels::TensorView& view) { return view.ndim <= kMaxRecordedDims; }

  // The recorded form of `view`, which must fit().
  static RecordedView of(const kernels::TensorView& view) {
    RecordedView recorded;
    recorded.data = view.data;
    recorded.dtype = view.dtype;
    recorded.ndim = view.ndim;
    for (int d = 0; d < view.ndim; ++d) {
      recorded.sizes[d] = view.sizes[d];
      recorded.strides[d] = view.strides[d];
    }
    return recorded;
  }

  // The kernel library's view of the same memory.
  kernels::TensorView expand() const {
    kernels::TensorView view;
    expand_into(view);
    return view;
  }

  // The same, written into `view` in place: only the dims in use (a TensorView is about 1 KB).
  void expand_into(kernels::TensorView& view) const {
    view.data = data;
    view.dtype = dtype;
    view.ndim = ndim;
    for (int d = 0; d < ndim; ++d) {
      view.sizes[d] = sizes[d];
      view.strides[d] = strides[d];
    }
  }

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }
};

}  // namespace openneuron::adaptive
