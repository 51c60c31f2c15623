#include "kernels/shape/sorted_search.h"

#include <stdexcept>
#include <string>

#include "kernels/core/element_types.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

// Binary search over one row. "Goes before" is !(boundary >= value) for the left side and
// !(boundary > value) for the right, so a NaN value lands after every number, and NaN
// boundaries are placed as PyTorch's CPU kernel places them.
template <typename T>
int64_t insertion_point(const T* row, const int64_t* order, int64_t length, T value, bool right) {
  const auto target = comparable(value);
  int64_t low = 0, high = length;
  while (low < high) {
    const int64_t mid = low + (high - low) / 2;
    const auto boundary = comparable(row[order != nullptr ? order[mid] : mid]);
    const bool before = right ? !(boundary > target) : !(boundary >= target);
    if (before) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  return low;
}

}  // namespace

void sorted_search(const TensorView& out, const TensorView& boundaries, const TensorView& values,
                   const TensorView* sorter, bool right) {
  const int64_t rows = values.sizes[0];
  const int64_t count = values.sizes[1];
  const int64_t length = boundaries.sizes[1];
  const bool shared_row = boundaries.sizes[0] == 1;
  // A sorter entry outside its row would read past it: refused before anything is written.
  if (sorter != nullptr) {
    const auto* order = static_cast<const int64_t*>(sorter->data);
    for (int64_t i = 0; i < sorter->sizes[0] * length; ++i) {
      if (order[i] < 0 || order[i] >= length) {
        throw std::out_of_range("searchsorted: sorter index " + std::to_string(order[i]) +
                                " is out of range for a row of " + std::to_string(length) +
                                " sorted values");
      }
    }
  }
  visit_dtype(values.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* all_boundaries = static_cast<const T*>(boundaries.data);
    const T* all_values = static_cast<const T*>(values.data);
    const int64_t* all_orders = sorter ? static_cast<const int64_t*>(sorter->data) : nullptr;
    parallel_for(0, rows * count, 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t row = shared_row ? 0 : i / count;
        const int64_t* order = all_orders ? all_orders + row * length : nullptr;
        const int64_t at =
            insertion_point(all_boundaries + row * length, order, length, all_values[i], right);
        if (out.dtype == DType::Int32) {
          static_cast<int32_t*>(out.data)[i] = static_cast<int32_t>(at);
        } else {
          static_cast<int64_t*>(out.data)[i] = at;
        }
      }
    });
  });
}

}  // namespace openneuron::kernels
