// A stable merge sort of row indices (stable, so rows comparing equal keep their order and a
// comparison that is not a strict order, as NaN makes it, cannot run past the ends).
#include "kernels/shape/row_order.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "kernels/core/element_types.h"
#include "kernels/core/row_io.h"

namespace openneuron::kernels {

void lexicographic_row_order(const TensorView& order, const TensorView& rows) {
  if (rows.ndim != 2 || order.ndim != 1 || order.dtype != DType::Int64 ||
      order.sizes[0] != rows.sizes[0]) {
    throw std::invalid_argument("openneuron kernels: lexicographic_row_order needs n x m rows");
  }
  const int64_t n = rows.sizes[0], m = rows.sizes[1];
  std::vector<int64_t> indices(static_cast<size_t>(n));
  std::iota(indices.begin(), indices.end(), 0);
  visit_dtype(rows.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* data = static_cast<const T*>(rows.data);
    const auto element = [&](int64_t row, int64_t column) {
      return comparable(load_value(&data[row * rows.strides[0] + column * rows.strides[1]]));
    };
    std::stable_sort(indices.begin(), indices.end(), [&](int64_t a, int64_t b) {
      for (int64_t column = 0; column < m; ++column) {
        const auto x = element(a, column), y = element(b, column);
        if (x < y) return true;
        if (x > y) return false;
      }
      return false;
    });
  });
  int64_t* out = static_cast<int64_t*>(order.data);
  for (int64_t i = 0; i < n; ++i) out[i * order.strides[0]] = indices[i];
}

}  // namespace openneuron::kernels
