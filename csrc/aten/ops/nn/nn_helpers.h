// Small helpers shared by the nn family's bridge files (ops_conv, ops_pooling,
// ops_normalization, ops_loss, ops_attention).
#pragma once

#include <ATen/core/Tensor.h>

#include <initializer_list>
#include <optional>

#include "aten/core/op_helpers.h"
#include "kernels/core/tensor_view.h"

namespace openneuron::bridge::nn {

// The floating dtypes the nn kernels compute natively (in fp32).
inline bool is_nn_dtype(at::ScalarType type) {
  return type == at::kFloat || type == at::kBFloat16 || type == at::kHalf;
}

// True when every defined tensor has an nn dtype.
inline bool all_nn_dtypes(std::initializer_list<const at::Tensor*> tensors) {
  for (const at::Tensor* t : tensors) {
    if (t != nullptr && t->defined() && !is_nn_dtype(t->scalar_type())) return false;
  }
  return true;
}

inline const at::Tensor* opt(const std::optional<at::Tensor>& tensor) {
  return tensor.has_value() && tensor->defined() ? &*tensor : nullptr;
}

// check_same_device for up to 8 tensors where absent optional ones are nullptr.
inline c10::Device check_device(const char* op, std::initializer_list<const at::Tensor*> tensors) {
  static const at::Tensor undefined;
  const at::Tensor* p[8];
  int count = 0;
  for (const at::Tensor* t : tensors) {
    TORCH_INTERNAL_ASSERT(count < 8, "check_device: too many tensors");
    p[count++] = t != nullptr ? t : &undefined;
  }
  for (int i = count; i < 8; ++i) p[i] = &undefined;
  return check_same_device(op, {p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]});
}

// `view` with a size-1 dim inserted at `dim` (e.g. [N, C, L] -> [N, C, 1, L]).
inline kernels::TensorView with_unit_dim(kernels::TensorView view, int dim) {
  for (int d = view.ndim; d > dim; --d) {
    view.sizes[d] = view.sizes[d - 1];
    view.strides[d] = view.strides[d - 1];
  }
  view.sizes[dim] = 1;
  view.strides[dim] = 0;
  ++view.ndim;
  return view;
}

// A contiguous tensor's elements as a 1-D view.
inline kernels::TensorView flat(kernels::TensorView view) {
  const int64_t n = view.numel();
  view.ndim = 1;
  view.sizes[0] = n;
  view.strides[0] = 1;
  return view;
}

}  // namespace openneuron::bridge::nn
