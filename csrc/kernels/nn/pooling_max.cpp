// Max pooling forward: planes in parallel; within a row, the output columns whose windows lie
// inside the input run tap by tap across the row (vectorised compares and blends), the
// clipped border columns one cell at a time. Nothing branches on the data: with random inputs
// a data-dependent branch mispredicts about half the time and costs ten times the arithmetic.
#include <algorithm>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "kernels/core/dense_float.h"
#include "kernels/core/element_types.h"
#include "kernels/nn/pooling.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

// Windows clipped to the input once per call: along an axis, output o reads `count[o]` taps
// from input position `first[o]` on (PyTorch's first tap is the first in-bounds one).
struct MaxPoolAxis {
  std::vector<int64_t> first, count;
  int64_t interior_begin = 0, interior_end = 0;  // outputs whose whole window is in bounds

  MaxPoolAxis(int64_t in_size, int64_t out_size, int64_t kernel, int64_t stride, int64_t pad,
              int64_t dilation)
      : first(static_cast<size_t>(out_size)), count(static_cast<size_t>(out_size)) {
    for (int64_t o = 0; o < out_size; ++o) {
      int64_t start = o * stride - pad;
      int64_t taps = kernel;
      while (taps > 0 && start < 0) {
        start += dilation;
        --taps;
      }
      while (taps > 0 && start + (taps - 1) * dilation >= in_size) --taps;
      first[static_cast<size_t>(o)] = start;
      count[static_cast<size_t>(o)] = taps;
    }
    interior_begin = out_size;
    for (int64_t o = 0; o < out_size; ++o) {
      if (count[static_cast<size_t>(o)] == kernel &&
          first[static_cast<size_t>(o)] == o * stride - pad) {
        interior_begin = std::min(interior_begin, o);
        interior_end = o + 1;
      }
    }
    if (interior_begin == out_size) interior_end = out_size;
  }
};

struct MaxPoolGeometry {
  int64_t H, W, OH, OW;
  Pool2dParams p;
  MaxPoolAxis rows, cols;
  MaxPoolGeometry(int64_t h, int64_t w, int64_t oh, int64_t ow, const Pool2dParams& params)
      : H(h),
        W(w),
        OH(oh),
        OW(ow),
        p(params),
        rows(h, oh, params.kernel[0], params.stride[0], params.padding[0], params.dilation[0]),
        cols(w, ow, params.kernel[1], params.stride[1], params.padding[1], params.dilation[1]) {}
  // 2x2 windows at stride 2 without dilation: the common case, done in one pass per row.
  bool two_by_two() const {
    return p.kernel[1] == 2 && p.stride[1] == 2 && p.dilation[0] == 1 && p.dilation[1] == 1;
  }
};

template <typename T>
inline float load_float(T value) {
  if constexpr (std::is_same_v<T, float>) {
    return value;
  } else {
    return narrow_to_float(value);
  }
}

template <typename T>
inline T store_float(float value) {
  if constexpr (std::is_same_v<T, float>) {
    return value;
  } else {
    return narrow_from_float<T>(value);  // exact: the value is one of the inputs
  }
}

// PyTorch's rule, in scan order: a tap replaces the maximum when greater, or when NaN.
inline bool takes_over(float value, float best) { return (value > best) | (value != value); }

// One tap for `count` consecutive interior cells of a row: the tap of cell i is
// taps[i * step], whose flat plane index is index + i * step. `first` starts the maxima.
template <typename T>
void take_tap(const T* __restrict taps, int64_t step, int64_t index, int64_t count, bool first,
              float* __restrict best, int64_t* __restrict best_index) {
  if (first) {
    for (int64_t i = 0; i < count; ++i) {
      best[i] = load_float(taps[i * step]);
      best_index[i] = index + i * step;
    }
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    const float value = load_float(taps[i * step]);
    const bool take = takes_over(value, best[i]);
    best[i] = take ? value : best[i];
    best_index[i] = take ? index + i * step : best_index[i];
  }
}

// Full 2x2 windows over rows `top` and `bottom` (plane index of top[0]: top_index).
template <typename T>
void pool_two_by_two(const T* __restrict top, const T* __restrict bottom, int64_t pairs,
                     int64_t top_index, int64_t width, T* __restrict dst, int64_t* __restrict idx) {
  for (int64_t ow = 0; ow < pairs; ++ow) {
    const float a = load_float(top[2 * ow]), b = load_float(top[2 * ow + 1]);
    const float c = load_float(bottom[2 * ow]), d = load_float(bottom[2 * ow + 1]);
    float best = a;
    int64_t offset = 0;
    bool take = takes_over(b, best);
    best = take ? b : best;
    offset = take ? 1 : offset;
    take = takes_over(c, best);
    best = take ? c : best;
    offset = take ? width : offset;
    take = takes_over(d, best);
    best = take ? d : best;
    offset = take ? width + 1 : offset;
    dst[ow] = store_float<T>(best);
    idx[ow] = top_index + 2 * ow + offset;
  }
}

// One output cell with its clipped window; -inf and index -1 for an empty window.
template <typename T>
void pool_cell(const T* src, const MaxPoolGeometry& g, int64_t oh, int64_t ow, T* dst,
               int64_t* idx) {
  const int64_t ih0 = g.rows.first[static_cast<size_t>(oh)];
  const int64_t taps_h = g.rows.count[static_cast<size_t>(oh)];
  const int64_t iw0 = g.cols.first[static_cast<size_t>(ow)];
  const int64_t taps_w = g.cols.count[static_cast<size_t>(ow)];
  float best = -std::numeric_limits<float>::infinity();
  int64_t best_index = -1;
  if (taps_h > 0 && taps_w > 0) {
    best_index = ih0 * g.W + iw0;
    best = load_float(src[best_index]);
  }
  for (int64_t kh = 0; kh < taps_h; ++kh) {
    const int64_t row = (ih0 + kh * g.p.dilation[0]) * g.W;
    for (int64_t kw = 0; kw < taps_w; ++kw) {
      const int64_t index = row + iw0 + kw * g.p.dilation[1];
      const float value = load_float(src[index]);
      const bool take = takes_over(value, best);
      best = take ? value : best;
      best_index = take ? index : best_index;
    }
  }
  *dst = store_float<T>(best);
  *idx = best_index;
}

// Pools dense [planes, H, W] into dense [planes, OH, OW] with flat per-plane argmax indices.
template <typename T>
void max_pool_planes(const T* input, T* out, int64_t* indices, int64_t planes,
                     const MaxPoolGeometry& g) {
  const int64_t in_plane = g.H * g.W, out_plane = g.OH * g.OW;
  const int64_t lo = g.cols.interior_begin, hi = g.cols.interior_end;
  const int64_t sw = g.p.stride[1];
  parallel_for(0, planes, 8, [&](int64_t begin, int64_t end) {
    std::vector<float> best(static_cast<size_t>(std::max<int64_t>(hi - lo, 1)));
    std::vector<int64_t> best_index(best.size());
    for (int64_t plane = begin; plane < end; ++plane) {
      const T* src = input + plane * in_plane;
      T* dst = out + plane * out_plane;
      int64_t* idx = indices + plane * out_plane;
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        const int64_t ih0 = g.rows.first[static_cast<size_t>(oh)];
        const int64_t taps_h = g.rows.count[static_cast<size_t>(oh)];
        T* dst_row = dst + oh * g.OW;
        int64_t* idx_row = idx + oh * g.OW;
        int64_t done_begin = 0, done_end = 0;  // columns handled by a row-wide pass
        if (taps_h == 2 && g.two_by_two() && lo < hi) {
          const T* top = src + ih0 * g.W + (lo * 2 - g.p.padding[1]);
          pool_two_by_two(top, top + g.W, hi - lo, ih0 * g.W + lo * 2 - g.p.padding[1], g.W,
                          dst_row + lo, idx_row + lo);
          done_begin = lo;
          done_end = hi;
        } else if (taps_h > 0 && lo < hi) {
          for (int64_t kh = 0; kh < taps_h; ++kh) {
            const int64_t row = (ih0 + kh * g.p.dilation[0]) * g.W;
            for (int64_t kw = 0; kw < g.p.kernel[1]; ++kw) {
              const int64_t col = lo * sw - g.p.padding[1] + kw * g.p.dilation[1];
              take_tap(src + row + col, sw, row + col, hi - lo, kh == 0 && kw == 0, best.data(),
                       best_index.data());
            }
          }
          for (int64_t i = 0; i < hi - lo; ++i) {
            dst_row[lo + i] = store_float<T>(best[static_cast<size_t>(i)]);
            idx_row[lo + i] = best_index[static_cast<size_t>(i)];
          }
          done_begin = lo;
          done_end = hi;
        }
        for (int64_t ow = 0; ow < done_begin; ++ow)
          pool_cell(src, g, oh, ow, dst_row + ow, idx_row + ow);
        for (int64_t ow = done_end; ow < g.OW; ++ow)
          pool_cell(src, g, oh, ow, dst_row + ow, idx_row + ow);
      }
    }
  });
}

}  // namespace

void max_pool2d_forward(const TensorView& out, const TensorView& indices, const TensorView& input,
                        const Pool2dParams& p) {
  if (out.ndim != 4 || input.ndim != 4 || out.sizes[0] != input.sizes[0] ||
      out.sizes[1] != input.sizes[1]) {
    throw std::invalid_argument("openneuron kernels: pooling: views must be [N, C, H, W] alike");
  }
  if (indices.dtype != DType::Int64 || !indices.is_contiguous()) {
    throw std::invalid_argument("openneuron kernels: max_pool2d: indices must be dense int64");
  }
  if (out.numel() == 0) return;
  const MaxPoolGeometry geometry(input.sizes[2], input.sizes[3], out.sizes[2], out.sizes[3], p);
  int64_t* index_data = static_cast<int64_t*>(indices.data);
  const int64_t planes = out.sizes[0] * out.sizes[1];
  const bool native =
      input.dtype == out.dtype && input.is_contiguous() && out.is_contiguous() &&
      (out.dtype == DType::Float32 || out.dtype == DType::BFloat16 || out.dtype == DType::Float16);
  if (native) {
    // Maxima are input values, so 16-bit planes are pooled as they are, without fp32 copies.
    visit_dtype(out.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, BFloat16> ||
                    std::is_same_v<T, Half>) {
        max_pool_planes(static_cast<const T*>(input.data), static_cast<T*>(out.data), index_data,
                        planes, geometry);
      }
    });
    return;
  }
  const DenseFloatInput in(input);
  DenseFloatOutput result(out);
  max_pool_planes(in.data(), result.data(), index_data, planes, geometry);
  result.commit();
}

}  // namespace openneuron::kernels
