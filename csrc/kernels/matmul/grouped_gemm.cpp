#include "kernels/matmul/grouped_gemm.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "kernels/core/scalar.h"
#include "kernels/matmul/group_views.h"
#include "kernels/matmul/matmul.h"
#include "kernels/pointwise/cast.h"
#include "kernels/runtime/parallel_views.h"

namespace openneuron::kernels {

namespace {

// Runs product(g, begin, end) per group over a grouped dimension of `extent`; returns
// where the last group ended.
template <typename Product>
int64_t for_each_group(const TensorView& offsets, int64_t extent, Product&& product) {
  int64_t start = 0;
  for (int64_t g = 0; g < offsets.sizes[0]; ++g) {
    const int64_t end = std::clamp<int64_t>(group_end(offsets, g), start, extent);
    product(g, start, end);
    start = end;
  }
  return start;
}

}  // namespace

void grouped_gemm(const TensorView& out, const TensorView& a, const TensorView& b,
                  const TensorView* offsets) {
  const Scalar zero = Scalar::from_int(0);
  if (a.ndim == 3 && b.ndim == 3) {
    gemm(out, a, b, nullptr, 1.0, 0.0);
    return;
  }
  if (offsets == nullptr || offsets->dtype != DType::Int32 || offsets->ndim != 1) {
    throw std::invalid_argument("openneuron kernels: grouped_gemm needs int32 offsets");
  }
  if (a.ndim == 2 && b.ndim == 3) {
    const int64_t rows = a.sizes[0];
    const int64_t done = for_each_group(*offsets, rows, [&](int64_t g, int64_t begin, int64_t end) {
      if (end > begin) {
        gemm(slice_view(out, 0, begin, end), slice_view(a, 0, begin, end), select_first(b, g),
             nullptr, 1, 0);
      }
    });
    if (done < rows) fill(slice_view(out, 0, done, rows), zero);
  } else if (a.ndim == 3 && b.ndim == 2) {
    const int64_t cols = b.sizes[1];
    const int64_t done = for_each_group(*offsets, cols, [&](int64_t g, int64_t begin, int64_t end) {
      if (end > begin) {
        gemm(slice_view(out, 1, begin, end), select_first(a, g), slice_view(b, 1, begin, end),
             nullptr, 1, 0);
      }
    });
    if (done < cols) fill(slice_view(out, 1, done, cols), zero);
  } else if (a.ndim == 2 && b.ndim == 2) {
    const int64_t inner = a.sizes[1];
    for_each_group(*offsets, inner, [&](int64_t g, int64_t begin, int64_t end) {
      const TensorView out_g = select_first(out, g);
      if (end == begin) {
        fill(out_g, zero);
      } else {
        gemm(out_g, slice_view(a, 1, begin, end), slice_view(b, 0, begin, end), nullptr, 1, 0);
      }
    });
  } else {
    throw std::invalid_argument("openneuron kernels: grouped_gemm operands must be 2-D or 3-D");
  }
}

}  // namespace openneuron::kernels
