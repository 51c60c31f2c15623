// Walking a tensor one line along a dimension at a time, for kernels that read whole lines
// (sorting, selection) and write one result per line or a line of results.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernels/core/element_types.h"
#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// The lines of `in` along `dim`, with the matching offsets into two outputs (values, indices)
// that have in's ndim (any size along dim).
struct Lines {
  int64_t count = 1;   // number of lines
  int64_t length = 1;  // elements per line
  int ndim = 0;        // dims other than `dim`
  int64_t sizes[kMaxDims];
  int64_t strides[3][kMaxDims];  // values, indices, in
  int64_t steps[3];              // stride along dim
};

inline Lines make_lines(const TensorView& values, const TensorView& indices, const TensorView& in,
                        int dim) {
  Lines lines;
  const TensorView* views[3] = {&values, &indices, &in};
  for (int d = 0; d < in.ndim; ++d) {
    if (d == dim) continue;
    lines.sizes[lines.ndim] = in.sizes[d];
    for (int k = 0; k < 3; ++k) lines.strides[k][lines.ndim] = views[k]->strides[d];
    ++lines.ndim;
    lines.count *= in.sizes[d];
  }
  lines.length = in.ndim == 0 ? 1 : in.sizes[dim];
  for (int k = 0; k < 3; ++k) lines.steps[k] = in.ndim == 0 ? 1 : views[k]->strides[dim];
  return lines;
}

// Element offsets of line `line` in values, indices and in.
inline void line_offsets(const Lines& lines, int64_t line, int64_t offsets[3]) {
  offsets[0] = offsets[1] = offsets[2] = 0;
  for (int d = lines.ndim - 1; d >= 0; --d) {
    const int64_t i = line % lines.sizes[d];
    line /= lines.sizes[d];
    for (int k = 0; k < 3; ++k) offsets[k] += i * lines.strides[k][d];
  }
}

// The value a line's element is compared by: narrow floats as fp32 (order-preserving).
template <typename T>
using CompareType = decltype(comparable(std::declval<T>()));

template <typename V>
inline bool is_nan_value(V v) {
  if constexpr (std::is_floating_point_v<V>) {
    return v != v;
  } else {
    return false;
  }
}

}  // namespace openneuron::kernels
