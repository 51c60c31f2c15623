#include "kernels/reduce/histogram.h"

#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/core/element_types.h"
#include "kernels/core/row_io.h"
#include "kernels/core/strided_loop.h"

namespace openneuron::kernels {

namespace {

// Calls fn(value) for every element of `in`, in memory order.
template <typename T, typename Fn>
void for_each_element(const TensorView& in, Fn&& fn) {
  for_each_row<1>({&in}, LoopOrder::kFirstOperandMemory, [&](const RowPointers<1>& row, int64_t n) {
    const char* p = row.ptrs[0];
    for (int64_t j = 0; j < n; ++j) {
      fn(load_value(reinterpret_cast<const T*>(p + j * row.strides[0])));
    }
  });
}

double edge_at(const TensorView& edges, int64_t i) {
  return visit_dtype(edges.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const char* base = static_cast<const char*>(edges.data);
    return cast_value<double>(*reinterpret_cast<const T*>(base + i * edges.strides[0] * sizeof(T)));
  });
}

// The value of `value` after rounding to T, in T's arithmetic type (the CPU's kernel computes
// every step of a 16-bit placement in the 16-bit type).
template <typename T>
auto in_type(double value) {
  if constexpr (kIsNarrowFloat<T>) {
    return narrow_to_float(narrow_from_float<T>(static_cast<float>(value)));
  } else {
    return static_cast<T>(value);
  }
}

// The CPU's placement: linear interpolation over the outer edges, each step in in's dtype,
// truncated; only the upper end is moved into the last bin.
void count_floating(std::vector<int64_t>& counts, const TensorView& in, const TensorView& edges) {
  const int64_t bins = static_cast<int64_t>(counts.size());
  visit_dtype(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_integral_v<T>) {
      const auto lo = in_type<T>(edge_at(edges, 0));
      const auto hi = in_type<T>(edge_at(edges, bins));
      const auto width = in_type<T>(hi - lo);
      const auto bin_count = in_type<T>(static_cast<double>(bins));
      for_each_element<T>(in, [&](T raw) {
        const auto v = in_type<T>(cast_value<double>(raw));
        if (!(v >= lo && v <= hi)) return;  // also drops NaN
        const auto offset = in_type<T>(v - lo);
        const auto scaled = in_type<T>(offset * bin_count);
        int64_t pos = static_cast<int64_t>(in_type<T>(scaled / width));
        if (pos >= bins) pos = bins - 1;
        ++counts[static_cast<size_t>(pos)];
      });
    }
  });
}

// CUDA's placement for integers: exact, with the range truncated to integers.
void count_integral(std::vector<int64_t>& counts, const TensorView& in, double min, double max) {
  const int64_t bins = static_cast<int64_t>(counts.size());
  const auto lo = static_cast<int64_t>(min);
  const auto hi = static_cast<int64_t>(max);
  visit_dtype(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      for_each_element<T>(in, [&](T raw) {
        const auto v = static_cast<int64_t>(raw);
        if (v < lo || v > hi) return;
        int64_t pos = 0;
        if (hi > lo) {
          pos = static_cast<int64_t>(static_cast<__int128>(v - lo) * bins / (hi - lo));
          if (pos == bins) pos = bins - 1;
        }
        ++counts[static_cast<size_t>(pos)];
      });
    }
  });
}

}  // namespace

void histc(const TensorView& out, const TensorView& in, const TensorView* edges, double min,
           double max) {
  const int64_t bins = out.sizes[0];
  std::vector<int64_t> counts(static_cast<size_t>(bins), 0);
  if (in.numel() > 0) {
    if (is_floating(in.dtype)) {
      count_floating(counts, in, *edges);
    } else {
      count_integral(counts, in, min, max);
    }
  }
  visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    char* base = static_cast<char*>(out.data);
    for (int64_t i = 0; i < bins; ++i) {
      *reinterpret_cast<T*>(base + i * out.strides[0] * static_cast<int64_t>(sizeof(T))) =
          cast_value<T>(counts[static_cast<size_t>(i)]);
    }
  });
}

void bincount(const TensorView& out, const TensorView& in, const TensorView* weights) {
  const int64_t n = in.sizes[0];
  char* base = static_cast<char*>(out.data);
  visit_dtype(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      const char* values = static_cast<const char*>(in.data);
      auto value_at = [&](int64_t i) {
        return static_cast<int64_t>(*reinterpret_cast<const T*>(
            values + i * in.strides[0] * static_cast<int64_t>(sizeof(T))));
      };
      if (weights == nullptr) {
        auto* counts = reinterpret_cast<int64_t*>(base);
        for (int64_t i = 0; i < n; ++i) counts[value_at(i) * out.strides[0]] += 1;
        return;
      }
      const char* weight_base = static_cast<const char*>(weights->data);
      auto* sums = reinterpret_cast<float*>(base);
      for (int64_t i = 0; i < n; ++i) {
        const float w = *reinterpret_cast<const float*>(
            weight_base + i * weights->strides[0] * static_cast<int64_t>(sizeof(float)));
        sums[value_at(i) * out.strides[0]] += w;
      }
    }
  });
}

void min_max(const TensorView& in, double* min, double* max) {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  bool nan = false;
  visit_dtype(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_element<T>(in, [&](T raw) {
      const double v = cast_value<double>(raw);
      if (std::isnan(v)) nan = true;
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    });
  });
  if (nan) lo = hi = std::numeric_limits<double>::quiet_NaN();
  *min = lo;
  *max = hi;
}

}  // namespace openneuron::kernels
