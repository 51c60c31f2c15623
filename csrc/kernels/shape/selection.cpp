// Selection runs the CPU's own algorithms over each line (a median-of-three quickselect for
// kthvalue, std::nth_element over indices for median, std::sort of indices by value for mode,
// which moves them as the CPU's sort moves its (value, index) pairs): which of several equal
// elements is reported depends on the algorithm, and users compare indices with the CPU's.
#include "kernels/shape/selection.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/core/element_types.h"
#include "kernels/core/row_io.h"
#include "kernels/runtime/parallel.h"
#include "kernels/shape/dim_lines.h"

namespace openneuron::kernels {
namespace {

// How a line's elements are held while selecting: as compared, bool as a byte (a vector of
// bool packs bits, which cannot be swapped in place).
template <typename T>
using LineValue = std::conditional_t<std::is_same_v<CompareType<T>, bool>, uint8_t, CompareType<T>>;

// x ranks above y: NaN above everything else.
template <typename V>
bool above(V x, V y) {
  return (is_nan_value(x) && !is_nan_value(y)) || x > y;
}

// Moves the k-th smallest (k from 0) of values to position k, carrying order along: the
// quickselect PyTorch's CPU kthvalue runs (median-of-three pivot, Hoare partition).
template <typename V>
void quickselect(std::vector<V>& values, std::vector<int64_t>& order, int64_t k) {
  const auto swap = [&](int64_t i, int64_t j) {
    std::swap(values[i], values[j]);
    std::swap(order[i], order[j]);
  };
  int64_t left = 0, right = static_cast<int64_t>(values.size()) - 1;
  while (right > left) {
    if (right == left + 1) {
      if (above(values[left], values[right])) swap(left, right);
      return;
    }
    swap((left + right) >> 1, left + 1);
    if (above(values[left + 1], values[right])) swap(left + 1, right);
    if (above(values[left], values[right])) swap(left, right);
    if (above(values[left + 1], values[left])) swap(left + 1, left);
    const V pivot = values[left];
    int64_t i = left + 1, j = right;
    for (;;) {
      do ++i;
      while (above(pivot, values[i]));
      do --j;
      while (above(values[j], pivot));
      if (j < i) break;
      swap(i, j);
    }
    swap(left, j);
    if (j <= k) left = i;
    if (j >= k) right = j - 1;
  }
}

// Runs pick(line values, order) on every line, order holding 0..n-1 for pick to rearrange
// (both buffers reused across a thread's lines); writes the element at the returned index and
// the index.
template <typename T, typename Pick>
void for_each_line(const TensorView& values, const TensorView& indices, const TensorView& in,
                   int dim, Pick pick) {
  using V = LineValue<T>;
  const Lines lines = make_lines(values, indices, in, dim);
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(lines.length, 1));
  parallel_for(0, lines.count, grain, [&](int64_t begin, int64_t end) {
    std::vector<V> line_values(static_cast<size_t>(lines.length));
    std::vector<int64_t> order(static_cast<size_t>(lines.length));
    for (int64_t line = begin; line < end; ++line) {
      int64_t off[3];
      line_offsets(lines, line, off);
      const T* src = static_cast<const T*>(in.data) + off[2];
      for (int64_t i = 0; i < lines.length; ++i) {
        line_values[i] = comparable(load_value(&src[i * lines.steps[2]]));
      }
      std::iota(order.begin(), order.end(), 0);
      const int64_t index = pick(line_values, order);
      // The element itself, read back, so NaN payloads and the sign of zero survive.
      static_cast<T*>(values.data)[off[0]] = load_value(&src[index * lines.steps[2]]);
      static_cast<int64_t*>(indices.data)[off[1]] = index;
    }
  });
}

void check(const TensorView& values, const TensorView& indices, const TensorView& in, int dim) {
  if (values.ndim != in.ndim || indices.ndim != in.ndim || values.dtype != in.dtype ||
      indices.dtype != DType::Int64 || dim < 0 || (in.ndim > 0 && dim >= in.ndim) ||
      in.numel() == 0) {
    throw std::invalid_argument("openneuron kernels: selection output layout mismatch");
  }
}

}  // namespace

void kthvalue(const TensorView& values, const TensorView& indices, const TensorView& in, int dim,
              int64_t k) {
  check(values, indices, in, dim);
  const int64_t length = in.ndim == 0 ? 1 : in.sizes[dim];
  if (k < 1 || k > length)
    throw std::invalid_argument("openneuron kernels: kthvalue k out of range");
  visit_dtype(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using V = LineValue<T>;
    for_each_line<T>(values, indices, in, dim,
                     [&](std::vector<V>& line, std::vector<int64_t>& order) {
                       quickselect(line, order, k - 1);
                       return order[k - 1];
                     });
  });
}

void median(const TensorView& values, const TensorView& indices, const TensorView& in, int dim,
            bool ignore_nan) {
  check(values, indices, in, dim);
  visit_dtype(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using V = LineValue<T>;
    for_each_line<T>(
        values, indices, in, dim,
        [&](std::vector<V>& line, std::vector<int64_t>& order) -> int64_t {
          const auto size = static_cast<int64_t>(line.size());
          const auto nan_count = std::count_if(line.begin(), line.end(), is_nan_value<V>);
          if (!ignore_nan && nan_count > 0) {
            return std::find_if(line.begin(), line.end(), is_nan_value<V>) - line.begin();
          }
          // C++ division: an all-NaN line picks rank 0.
          const auto nth = order.begin() + (size - nan_count - 1) / 2;
          std::nth_element(order.begin(), nth, order.end(), [&](int64_t i, int64_t j) {
            const V a = line[i], b = line[j];
            return a < b || (a == b && i < j) || (is_nan_value(b) && !is_nan_value(a));
          });
          return *nth;
        });
  });
}

void mode(const TensorView& values, const TensorView& indices, const TensorView& in, int dim) {
  check(values, indices, in, dim);
  visit_dtype(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using V = LineValue<T>;
    for_each_line<T>(values, indices, in, dim,
                     [&](std::vector<V>& line, std::vector<int64_t>& order) {
                       const auto size = static_cast<int64_t>(line.size());
                       // Sorting indices by their values moves them exactly as the CPU's sort of
                       // (value, index) pairs moves its pairs, so equal values end in the same
                       // order.
                       std::sort(order.begin(), order.end(),
                                 [&](int64_t a, int64_t b) { return line[a] < line[b]; });
                       // Runs of equal values (NaN != NaN: each NaN is a run of one); the first
                       // longest wins.
                       int64_t best = 0, best_count = 0, count = 0;
                       for (int64_t i = 0; i < size; ++i) {
                         ++count;
                         if (i == size - 1 || line[order[i]] != line[order[i + 1]]) {
                           if (count > best_count) {
                             best = order[i];
                             best_count = count;
                           }
                           count = 0;
                         }
                       }
                       return best;
                     });
  });
}

}  // namespace openneuron::kernels
