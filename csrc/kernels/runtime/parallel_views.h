// Splitting same-shaped strided views into disjoint parts that kernel threads process at once.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "kernels/core/element_types.h"
#include "kernels/core/tensor_view.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {

// Elements below which handing work to another thread costs more than it saves.
constexpr int64_t kParallelGrainElements = 32768;

// `view` restricted to indices [begin, end) of dimension `dim`.
inline TensorView slice_view(const TensorView& view, int dim, int64_t begin, int64_t end) {
  TensorView part = view;
  part.sizes[dim] = end - begin;
  part.data = static_cast<char*>(view.data) +
              begin * view.strides[dim] * static_cast<int64_t>(element_size(view.dtype));
  return part;
}

// The dimension to split `view` along, other than `keep_whole` (-1 for none): the outermost
// one long enough to give every thread work, else the longest; -1 if none has 2+ indices.
inline int split_dimension(const TensorView& view, int keep_whole = -1) {
  const int64_t wanted = 2 * static_cast<int64_t>(kernel_thread_count());
  int longest = -1;
  for (int d = 0; d < view.ndim; ++d) {
    if (d == keep_whole || view.sizes[d] < 2) continue;
    if (view.sizes[d] >= wanted) return d;
    if (longest < 0 || view.sizes[d] > view.sizes[longest]) longest = d;
  }
  return longest;
}

// Calls fn(parts) on disjoint parts of `views` (all shaped like views[0]) that together cover
// them, in parallel when there are at least 2 * kParallelGrainElements elements; dimension
// `keep_whole` is never split. fn must only touch its own part.
template <size_t N, typename Fn>
void parallel_over_views(const std::array<TensorView, N>& views, const Fn& fn,
                         int keep_whole = -1) {
  const TensorView& first = views[0];
  const int64_t numel = first.numel();
  const int dim = numel < 2 * kParallelGrainElements || kernel_thread_count() == 1
                      ? -1
                      : split_dimension(first, keep_whole);
  if (dim < 0) {
    fn(views);
    return;
  }
  const int64_t per_index = numel / first.sizes[dim];
  const int64_t grain = std::max<int64_t>(1, kParallelGrainElements / per_index);
  parallel_for(0, first.sizes[dim], grain, [&](int64_t begin, int64_t end) {
    std::array<TensorView, N> parts;
    for (size_t k = 0; k < N; ++k) parts[k] = slice_view(views[k], dim, begin, end);
    fn(parts);
  });
}

}  // namespace openneuron::kernels
