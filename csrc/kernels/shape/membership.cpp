#include "kernels/shape/membership.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/core/element_types.h"
#include "kernels/core/row_io.h"
#include "kernels/core/strided_loop.h"

namespace openneuron::kernels {

namespace {

template <typename T>
bool is_nan(T value) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(value);
  } else {
    return false;
  }
}

}  // namespace

void isin(const TensorView& out, const TensorView& elements, const TensorView& test, bool invert) {
  visit_dtype(elements.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = decltype(comparable(T{}));
    std::vector<C> sorted;
    sorted.reserve(static_cast<size_t>(test.numel()));
    for_each_row<1>(
        {&test}, LoopOrder::kFirstOperandMemory, [&](const RowPointers<1>& row, int64_t n) {
          for (int64_t j = 0; j < n; ++j) {
            const C value = comparable(
                load_value(reinterpret_cast<const T*>(row.ptrs[0] + j * row.strides[0])));
            if (!is_nan(value)) sorted.push_back(value);
          }
        });
    std::sort(sorted.begin(), sorted.end());
    for_each_row<2>(
        {&out, &elements}, LoopOrder::kFirstOperandMemory,
        [&](const RowPointers<2>& row, int64_t n) {
          for (int64_t j = 0; j < n; ++j) {
            const C value = comparable(
                load_value(reinterpret_cast<const T*>(row.ptrs[1] + j * row.strides[1])));
            const auto found = std::lower_bound(sorted.begin(), sorted.end(), value);
            const bool member = found != sorted.end() && *found == value;
            *reinterpret_cast<bool*>(row.ptrs[0] + j * row.strides[0]) = member != invert;
          }
        });
  });
}

}  // namespace openneuron::kernels
