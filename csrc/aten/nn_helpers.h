// Small helpers shared by the nn family's bridge files (ops_conv, ops_pooling,
// ops_normalization, ops_loss, ops_attention).
#pragma once

#include <ATen/core/Tensor.h>

#include <initializer_list>
#include <optional>

#include "kernels/tensor_view.h"

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
