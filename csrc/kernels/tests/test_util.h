// Host-side helpers for the kernel tests: owning tensors, view reshaping (permute, slice,
// expand), element access in double, and per-dtype tolerances.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "kernels/core/element_types.h"
#include "kernels/core/tensor_view.h"

namespace openneuron::kernels::testing {

// A contiguous tensor owning zero-initialised, 8-byte aligned storage.
struct HostTensor {
  std::vector<uint64_t> storage;
  TensorView view;
};

inline HostTensor make_tensor(DType dtype, const std::vector<int64_t>& sizes) {
  HostTensor tensor;
  tensor.view.dtype = dtype;
  tensor.view.ndim = static_cast<int>(sizes.size());
  int64_t numel = 1;
  for (int d = tensor.view.ndim - 1; d >= 0; --d) {
    tensor.view.sizes[d] = sizes[d];
    tensor.view.strides[d] = numel;
    numel *= sizes[d];
  }
  const size_t bytes = static_cast<size_t>(numel) * element_size(dtype);
  tensor.storage.assign(bytes / 8 + 1, 0);
  tensor.view.data = tensor.storage.data();
  return tensor;
}

inline TensorView permute(const TensorView& view, const std::vector<int>& order) {
  TensorView result = view;
  for (size_t i = 0; i < order.size(); ++i) {
    result.sizes[i] = view.sizes[order[i]];
    result.strides[i] = view.strides[order[i]];
  }
  return result;
}

inline TensorView slice(const TensorView& view, int dim, int64_t start, int64_t length,
                        int64_t step = 1) {
  TensorView result = view;
  result.data = static_cast<char*>(view.data) +
                start * view.strides[dim] * static_cast<int64_t>(element_size(view.dtype));
  result.sizes[dim] = length;
  result.strides[dim] = view.strides[dim] * step;
  return result;
}

// Broadcasts size-1 dims to `sizes` with stride 0 (ndim must already match).
inline TensorView expand(const TensorView& view, const std::vector<int64_t>& sizes) {
  TensorView result = view;
  for (int d = 0; d < view.ndim; ++d) {
    if (view.sizes[d] == 1 && sizes[d] != 1) {
      result.sizes[d] = sizes[d];
      result.strides[d] = 0;
    }
  }
  return result;
}

inline void for_each_index(const TensorView& view,
                           const std::function<void(const std::vector<int64_t>&)>& fn) {
  if (view.numel() == 0) return;
  std::vector<int64_t> index(static_cast<size_t>(view.ndim), 0);
  while (true) {
    fn(index);
    int d = view.ndim - 1;
    for (; d >= 0; --d) {
      if (++index[d] < view.sizes[d]) break;
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

inline char* element_ptr(const TensorView& view, const std::vector<int64_t>& index) {
  int64_t offset = 0;
  for (int d = 0; d < view.ndim; ++d) offset += index[d] * view.strides[d];
  return static_cast<char*>(view.data) + offset * static_cast<int64_t>(element_size(view.dtype));
}

inline double get(const TensorView& view, const std::vector<int64_t>& index) {
  return visit_dtype(view.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return cast_value<double>(*reinterpret_cast<const T*>(element_ptr(view, index)));
  });
}

inline void set(const TensorView& view, const std::vector<int64_t>& index, double value) {
  visit_dtype(view.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    *reinterpret_cast<T*>(element_ptr(view, index)) = cast_value<T>(value);
  });
}

// value as it reads back after being stored in dtype.
inline double round_to(DType dtype, double value) {
  return visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return cast_value<double>(cast_value<T>(value));
  });
}

// Fills with uniform values in [low, high); integer dtypes get whole numbers.
inline void fill_random(const TensorView& view, std::mt19937& rng, double low, double high) {
  std::uniform_real_distribution<double> dist(low, high);
  for_each_index(view, [&](const std::vector<int64_t>& index) {
    const double value = dist(rng);
    set(view, index, is_floating(view.dtype) ? value : std::floor(value));
  });
}

// A fresh tensor of uniform values in [low, high).
inline HostTensor random_tensor(DType dtype, const std::vector<int64_t>& sizes, std::mt19937& rng,
                                double low = -1.0, double high = 1.0) {
  HostTensor t = make_tensor(dtype, sizes);
  fill_random(t.view, rng, low, high);
  return t;
}

// Absolute tolerance for comparing a kernel result against a double reference.
inline double tolerance(DType dtype, double reference) {
  const double magnitude = std::fabs(reference);
  switch (dtype) {
    case DType::Float32:
      return 1e-5 + 1e-5 * magnitude;
    case DType::Float64:
      return 1e-12 + 1e-12 * magnitude;
    case DType::BFloat16:
      return 1e-2 + 8e-3 * magnitude;
    case DType::Float16:
      return 1e-3 + 1e-3 * magnitude;
    case DType::Float8E4M3:
    case DType::Float8E5M2:
      return 0.13 * magnitude + 1e-2;
    default:
      return 0.0;
  }
}

// Both NaN, or equal within the dtype's tolerance.
inline bool close(DType dtype, double actual, double expected) {
  if (std::isnan(expected)) return std::isnan(actual);
  if (std::isinf(expected)) return actual == expected;
  return std::fabs(actual - expected) <= tolerance(dtype, expected);
}

}  // namespace openneuron::kernels::testing
