#include "kernels/shape/nonzero_static.h"

#include <vector>

#include "kernels/core/element_types.h"
#include "kernels/core/row_io.h"

namespace openneuron::kernels {

void nonzero_static(const TensorView& out, const TensorView& in, int64_t fill_value) {
  const int ndim = in.ndim;
  const int64_t rows = out.sizes[0];
  const int64_t row_stride = out.strides[0];
  const int64_t column_stride = out.ndim > 1 ? out.strides[1] : 0;
  auto* base = static_cast<int64_t*>(out.data);
  int64_t written = 0;
  const int64_t total = in.numel();
  if (ndim > 0 && total > 0) {
    std::vector<int64_t> coordinate(static_cast<size_t>(ndim), 0);
    visit_dtype(in.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* data = static_cast<const T*>(in.data);
      int64_t offset = 0;
      for (int64_t e = 0; e < total && written < rows; ++e) {
        if (cast_value<bool>(load_value(data + offset))) {
          int64_t* row = base + written * row_stride;
          for (int d = 0; d < ndim; ++d) row[d * column_stride] = coordinate[d];
          ++written;
        }
        for (int d = ndim - 1; d >= 0; --d) {
          offset += in.strides[d];
          if (++coordinate[d] < in.sizes[d]) break;
          offset -= in.strides[d] * in.sizes[d];
          coordinate[d] = 0;
        }
      }
    });
  }
  for (int64_t r = written; r < rows; ++r) {
    for (int d = 0; d < ndim; ++d) base[r * row_stride + d * column_stride] = fill_value;
  }
}

}  // namespace openneuron::kernels
