// Iteration over the rows of N strided operands sharing one shape, without per-element
// index arithmetic: an index counter walks the outer dims and the caller loops the innermost.
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "kernels/core/dtype.h"
#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

enum class LoopOrder {
  kRowMajor,            // rows visited in the shape's row-major order (element order matters)
  kFirstOperandMemory,  // dims reordered to follow operand 0's memory layout (faster)
};

template <size_t N>
struct RowPointers {
  std::array<char*, N> ptrs;
  std::array<int64_t, N> strides;  // bytes between consecutive row elements, per operand
};

// Calls row_fn(const RowPointers<N>&, int64_t count) once per innermost row. `sizes` is the
// shared shape; element_strides[k] and element_sizes[k] describe operand k. Size-1 dims are
// dropped and dims that are contiguous for every operand are merged, so dense tensors form a
// single row. Nothing is called for zero-size shapes; a 0-dim shape is one row of one element.
template <size_t N, typename RowFn>
void for_each_row(int ndim, const int64_t* sizes, const std::array<char*, N>& bases,
                  const std::array<const int64_t*, N>& element_strides,
                  const std::array<size_t, N>& element_sizes, LoopOrder order, RowFn&& row_fn) {
  int dims[kMaxDims];
  int kept = 0;
  for (int d = 0; d < ndim; ++d) {
    if (sizes[d] == 0) return;
    if (sizes[d] != 1) dims[kept++] = d;
  }
  if (order == LoopOrder::kFirstOperandMemory) {
    // Stable insertion sort by operand 0's stride, largest outermost.
    for (int i = 1; i < kept; ++i) {
      const int dim = dims[i];
      const int64_t key = std::llabs(element_strides[0][dim]);
      int j = i;
      while (j > 0 && std::llabs(element_strides[0][dims[j - 1]]) < key) {
        dims[j] = dims[j - 1];
        --j;
      }
      dims[j] = dim;
    }
  }

  int64_t loop_sizes[kMaxDims];
  int64_t loop_strides[N][kMaxDims];  // bytes
  int loop_ndim = 0;
  for (int i = 0; i < kept; ++i) {
    const int d = dims[i];
    if (loop_ndim > 0) {
      const int inner = loop_ndim - 1;
      bool mergeable = true;
      for (size_t k = 0; k < N; ++k) {
        const int64_t stride = element_strides[k][d] * static_cast<int64_t>(element_sizes[k]);
        if (loop_strides[k][inner] != stride * sizes[d]) mergeable = false;
      }
      if (mergeable) {
        loop_sizes[inner] *= sizes[d];
        for (size_t k = 0; k < N; ++k) {
          loop_strides[k][inner] = element_strides[k][d] * static_cast<int64_t>(element_sizes[k]);
        }
        continue;
      }
    }
    loop_sizes[loop_ndim] = sizes[d];
    for (size_t k = 0; k < N; ++k) {
      loop_strides[k][loop_ndim] = element_strides[k][d] * static_cast<int64_t>(element_sizes[k]);
    }
    ++loop_ndim;
  }

  RowPointers<N> row{bases, {}};
  if (loop_ndim == 0) {
    row_fn(static_cast<const RowPointers<N>&>(row), int64_t{1});
    return;
  }
  const int inner = loop_ndim - 1;
  for (size_t k = 0; k < N; ++k) row.strides[k] = loop_strides[k][inner];
  const int64_t row_length = loop_sizes[inner];

  int64_t index[kMaxDims];
  for (int d = 0; d < inner; ++d) index[d] = 0;
  while (true) {
    row_fn(static_cast<const RowPointers<N>&>(row), row_length);
    int d = inner - 1;
    for (; d >= 0; --d) {
      if (++index[d] < loop_sizes[d]) {
        for (size_t k = 0; k < N; ++k) row.ptrs[k] += loop_strides[k][d];
        break;
      }
      index[d] = 0;
      for (size_t k = 0; k < N; ++k) row.ptrs[k] -= loop_strides[k][d] * (loop_sizes[d] - 1);
    }
    if (d < 0) return;
  }
}

// Convenience form: the shape is views[0]'s; every view must have that ndim and sizes.
template <size_t N, typename RowFn>
void for_each_row(const std::array<const TensorView*, N>& views, LoopOrder order, RowFn&& row_fn) {
  std::array<char*, N> bases;
  std::array<const int64_t*, N> strides;
  std::array<size_t, N> element_sizes;
  for (size_t k = 0; k < N; ++k) {
    bases[k] = static_cast<char*>(views[k]->data);
    strides[k] = views[k]->strides;
    element_sizes[k] = element_size(views[k]->dtype);
  }
  for_each_row<N>(views[0]->ndim, views[0]->sizes, bases, strides, element_sizes, order,
                  std::forward<RowFn>(row_fn));
}

}  // namespace openneuron::kernels
