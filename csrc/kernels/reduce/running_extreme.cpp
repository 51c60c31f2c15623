// One pass per line, in parallel across lines.
#include "kernels/reduce/running_extreme.h"

#include <algorithm>
#include <stdexcept>

#include "kernels/core/element_types.h"
#include "kernels/core/row_io.h"
#include "kernels/runtime/parallel.h"
#include "kernels/shape/dim_lines.h"

namespace openneuron::kernels {
namespace {

template <typename T>
void running_extreme_typed(const TensorView& values, const TensorView& indices,
                           const TensorView& in, int dim, bool largest) {
  using V = CompareType<T>;
  const Lines lines = make_lines(values, indices, in, dim);
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(lines.length, 1));
  parallel_for(0, lines.count, grain, [&](int64_t begin, int64_t end) {
    for (int64_t line = begin; line < end; ++line) {
      int64_t off[3];
      line_offsets(lines, line, off);
      const T* src = static_cast<const T*>(in.data) + off[2];
      T* value_out = static_cast<T*>(values.data) + off[0];
      int64_t* index_out = static_cast<int64_t*>(indices.data) + off[1];
      T best = load_value(src);
      int64_t best_index = 0;
      for (int64_t i = 0; i < lines.length; ++i) {
        const T element = load_value(&src[i * lines.steps[2]]);
        const V x = comparable(element), current = comparable(best);
        const bool takes_over =
            is_nan_value(x) || (!is_nan_value(current) && (largest ? x >= current : x <= current));
        if (takes_over) {
          best = element;
          best_index = i;
        }
        value_out[i * lines.steps[0]] = best;
        index_out[i * lines.steps[1]] = best_index;
      }
    }
  });
}

}  // namespace

void running_extreme(const TensorView& values, const TensorView& indices, const TensorView& in,
                     int dim, bool largest) {
  if (values.ndim != in.ndim || indices.ndim != in.ndim || values.dtype != in.dtype ||
      indices.dtype != DType::Int64 || dim < 0 || (in.ndim > 0 && dim >= in.ndim)) {
    throw std::invalid_argument("openneuron kernels: running_extreme output layout mismatch");
  }
  if (in.numel() == 0) return;
  visit_dtype(in.dtype, [&](auto tag) {
    running_extreme_typed<typename decltype(tag)::type>(values, indices, in, dim, largest);
  });
}

}  // namespace openneuron::kernels
