#include "kernels/shape/shape.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "kernels/core/element_types.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {

void arange(const TensorView& out, Scalar start, Scalar step) {
  const int64_t n = out.numel();
  const int64_t stride = out.ndim > 0 ? out.strides[0] : 1;
  visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* data = static_cast<T*>(out.data);
    parallel_for(0, n, 32768, [&](int64_t begin, int64_t end) {
      if (!is_floating(out.dtype)) {
        for (int64_t i = begin; i < end; ++i)
          data[i * stride] = cast_value<T>(start.i + i * step.i);
      } else {
        const double s = start.to_double(), d = step.to_double();
        for (int64_t i = begin; i < end; ++i) {
          data[i * stride] = cast_value<T>(s + d * static_cast<double>(i));
        }
      }
    });
  });
}

void linspace(const TensorView& out, Scalar start, Scalar end) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const int64_t stride = out.ndim > 0 ? out.strides[0] : 1;
  const int64_t halfway = n / 2;
  visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* data = static_cast<T*>(out.data);
    if (n == 1) {
      data[0] = cast_value<T>(start.to_double());
      return;
    }
    if (is_floating(out.dtype)) {
      const float s = static_cast<float>(start.to_double());
      const float e = static_cast<float>(end.to_double());
      const float step = (e - s) / static_cast<float>(n - 1);
      for (int64_t i = 0; i < n; ++i) {
        const float v = i < halfway ? s + step * static_cast<float>(i)
                                    : e - step * static_cast<float>(n - i - 1);
        data[i * stride] = cast_value<T>(v);
      }
    } else {
      // As PyTorch's CPU linspace: start and end are first converted to the integer type
      // (truncated), the step and each value computed in double and truncated on store.
      const double s = std::trunc(start.to_double()), e = std::trunc(end.to_double());
      const double step = (e - s) / static_cast<double>(n - 1);
      for (int64_t i = 0; i < n; ++i) {
        const double v = i < halfway ? s + step * static_cast<double>(i)
                                     : e - step * static_cast<double>(n - i - 1);
        data[i * stride] = cast_value<T>(v);
      }
    }
  });
}

void logspace(const TensorView& out, Scalar start, Scalar end, double base) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const int64_t stride = out.ndim > 0 ? out.strides[0] : 1;
  const int64_t halfway = n / 2;
  visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* data = static_cast<T*>(out.data);
    if (n == 1) {
      data[0] = cast_value<T>(std::pow(base, start.to_double()));
      return;
    }
    const auto in_dtype = [](Scalar v) {
      return v.is_integral ? cast_value<T>(v.i) : cast_value<T>(v.f);
    };
    const T first = in_dtype(start), last = in_dtype(end);
    // end - start in the dtype's own arithmetic: integers exactly, floats in fp32, 16-bit
    // floats rounded back to their type.
    double span;
    if constexpr (kIsNarrowFloat<T>) {
      span =
          cast_value<double>(narrow_from_float<T>(narrow_to_float(last) - narrow_to_float(first)));
    } else if constexpr (std::is_floating_point_v<T>) {
      span = static_cast<double>(last - first);
    } else {
      span = static_cast<double>(cast_value<int64_t>(last) - cast_value<int64_t>(first));
    }
    const double step = span / static_cast<double>(n - 1);
    const double from = cast_value<double>(first), to = cast_value<double>(last);
    for (int64_t i = 0; i < n; ++i) {
      // The product is rounded before the sum, as the CPU computes it: a fused multiply-add
      // would move an exponent that should be exactly 0 off it (2^-1e-16 truncates to 0).
      volatile double offset = step * static_cast<double>(i < halfway ? i : n - i - 1);
      const double exponent = i < halfway ? from + offset : to - offset;
      data[i * stride] = cast_value<T>(std::pow(base, exponent));
    }
  });
}

void triangle_indices(const TensorView& out, int64_t row, int64_t col, int64_t offset, bool upper) {
  if (out.ndim != 2 || out.sizes[0] != 2 ||
      (out.dtype != DType::Int32 && out.dtype != DType::Int64)) {
    throw std::invalid_argument("openneuron kernels: triangle_indices needs a 2 x N int output");
  }
  visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* rows = static_cast<T*>(out.data);
    T* cols = rows + out.strides[0];
    int64_t k = 0;
    for (int64_t i = 0; i < row; ++i) {
      const int64_t first = upper ? std::max<int64_t>(0, i + offset) : 0;
      const int64_t end = upper ? col : std::min<int64_t>(col, i + offset + 1);
      for (int64_t j = first; j < end; ++j, ++k) {
        if (k >= out.sizes[1]) throw std::invalid_argument("openneuron kernels: triangle too big");
        rows[k * out.strides[1]] = cast_value<T>(i);
        cols[k * out.strides[1]] = cast_value<T>(j);
      }
    }
  });
}

void eye(const TensorView& out) {
  if (out.ndim != 2) throw std::invalid_argument("openneuron kernels: eye needs a 2-D output");
  visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* data = static_cast<T*>(out.data);
    const T zero = cast_value<T>(0.0), one = cast_value<T>(1.0);
    for (int64_t i = 0; i < out.sizes[0]; ++i) {
      for (int64_t j = 0; j < out.sizes[1]; ++j) {
        data[i * out.strides[0] + j * out.strides[1]] = i == j ? one : zero;
      }
    }
  });
}

void triangle(const TensorView& out, const TensorView& in, int64_t diagonal, bool upper) {
  if (out.ndim < 2 || in.ndim != out.ndim || in.dtype != out.dtype) {
    throw std::invalid_argument("openneuron kernels: tril/triu need matching views of ndim >= 2");
  }
  const int nd = out.ndim;
  const int64_t rows = out.sizes[nd - 2], cols = out.sizes[nd - 1];
  int64_t batches = 1;
  for (int d = 0; d < nd - 2; ++d) batches *= out.sizes[d];
  if (batches * rows * cols == 0) return;
  visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T zero = cast_value<T>(0.0);
    parallel_for(0, batches * rows, std::max<int64_t>(1, 16384 / cols),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t r = begin; r < end; ++r) {
                     int64_t batch = r / rows;
                     const int64_t i = r % rows;
                     int64_t in_off = i * in.strides[nd - 2], out_off = i * out.strides[nd - 2];
                     for (int d = nd - 3; d >= 0; --d) {
                       const int64_t c = batch % out.sizes[d];
                       batch /= out.sizes[d];
                       in_off += c * in.strides[d];
                       out_off += c * out.strides[d];
                     }
                     const T* src = static_cast<const T*>(in.data) + in_off;
                     T* dst = static_cast<T*>(out.data) + out_off;
                     const int64_t si = in.strides[nd - 1], so = out.strides[nd - 1];
                     for (int64_t j = 0; j < cols; ++j) {
                       const bool keep = upper ? (j - i >= diagonal) : (j - i <= diagonal);
                       dst[j * so] = keep ? src[j * si] : zero;
                     }
                   }
                 });
  });
}

}  // namespace openneuron::kernels
