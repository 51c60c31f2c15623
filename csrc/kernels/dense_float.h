// Private helper for the nn kernels: fp32 dense working copies of strided views, so the
// arithmetic loops only ever see contiguous float arrays (aliasing when already so).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cast.h"
#include "kernels/tensor_view.h"

namespace openneuron::kernels {

// A dense row-major view of `data` with the given dtype and shape.
inline TensorView dense_view_like(void* data, DType dtype, const TensorView& shape_of) {
  TensorView view;
  view.data = data;
  view.dtype = dtype;
  view.ndim = shape_of.ndim;
  int64_t stride = 1;
  for (int d = shape_of.ndim - 1; d >= 0; --d) {
    view.sizes[d] = shape_of.sizes[d];
    view.strides[d] = stride;
    stride *= shape_of.sizes[d];
  }
  return view;
}

// Read-only fp32 dense contents of a view: the view itself when it already is dense fp32.
class DenseFloatInput {
 public:
  explicit DenseFloatInput(const TensorView& view) {
    if (view.dtype == DType::Float32 && view.is_contiguous()) {
      data_ = static_cast<const float*>(view.data);
      return;
    }
    buffer_.resize(static_cast<size_t>(view.numel()));
    if (!buffer_.empty()) copy(dense_view_like(buffer_.data(), DType::Float32, view), view);
    data_ = buffer_.data();
  }
  const float* data() const { return data_; }

 private:
  std::vector<float> buffer_;
  const float* data_ = nullptr;
};

// A dense fp32 place to compute a result in; commit() stores it into the target view
// (rounding once for 16-bit dtypes). Writes go straight to the target when it is dense fp32.
class DenseFloatOutput {
 public:
  explicit DenseFloatOutput(const TensorView& target) : target_(target) {
    direct_ = target.dtype == DType::Float32 && target.is_contiguous();
    if (direct_) {
      data_ = static_cast<float*>(target.data);
    } else {
      buffer_.resize(static_cast<size_t>(target.numel()));
      data_ = buffer_.data();
    }
  }
  float* data() { return data_; }
  void commit() {
    if (!direct_ && !buffer_.empty()) {
      copy(target_, dense_view_like(buffer_.data(), DType::Float32, target_));
    }
  }

 private:
  TensorView target_;
  std::vector<float> buffer_;
  float* data_ = nullptr;
  bool direct_ = false;
};

}  // namespace openneuron::kernels
