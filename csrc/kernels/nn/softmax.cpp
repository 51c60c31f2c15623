// Softmax along one dim: each slice is gathered into a compute buffer, normalised with the
// max subtracted first, and scattered back rounded once.
#include "kernels/nn/softmax.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "kernels/core/element_types.h"
#include "kernels/core/row_io.h"
#include "kernels/core/strided_loop.h"
#include "kernels/core/vector_exp.h"
#include "kernels/runtime/parallel_views.h"

namespace openneuron::kernels {
namespace {

// The slices along `dim`: an outer shape with dim collapsed to 1, and the slice length.
struct SliceLayout {
  int ndim = 0;
  int64_t outer_sizes[kMaxDims] = {};
  int64_t length = 1;
  int dim = -1;  // -1 for a 0-dim tensor (a single slice of one element)
};

SliceLayout slice_layout(const TensorView& view, int dim) {
  SliceLayout layout;
  layout.ndim = view.ndim;
  if (view.ndim == 0) {
    if (dim != 0 && dim != -1) throw std::invalid_argument("openneuron kernels: softmax dim");
    return layout;
  }
  if (dim < 0) dim += view.ndim;
  if (dim < 0 || dim >= view.ndim) throw std::invalid_argument("openneuron kernels: softmax dim");
  for (int d = 0; d < view.ndim; ++d) layout.outer_sizes[d] = view.sizes[d];
  layout.outer_sizes[dim] = 1;
  layout.length = view.sizes[dim];
  layout.dim = dim;
  return layout;
}

void check_same_shape(const TensorView& a, const TensorView& b) {
  bool same = a.ndim == b.ndim;
  for (int d = 0; same && d < a.ndim; ++d) same = a.sizes[d] == b.sizes[d];
  if (!same) throw std::invalid_argument("openneuron kernels: softmax operands differ in shape");
}

// Calls group_fn(starts, dim_strides, neighbour_strides, count) for groups of `count` slices
// along layout.dim of the N views; slice s of a group starts at starts[k] + s *
// neighbour_strides[k]. All strides are in bytes.
template <size_t N, typename GroupFn>
void for_each_slice_group(const SliceLayout& layout, const std::array<const TensorView*, N>& views,
                          GroupFn&& group_fn) {
  if (layout.length == 0) return;
  std::array<char*, N> bases;
  std::array<const int64_t*, N> strides;
  std::array<size_t, N> sizes;
  std::array<int64_t, N> dim_strides;
  for (size_t k = 0; k < N; ++k) {
    bases[k] = static_cast<char*>(views[k]->data);
    strides[k] = views[k]->strides;
    sizes[k] = element_size(views[k]->dtype);
    dim_strides[k] =
        layout.dim < 0 ? 0 : views[k]->strides[layout.dim] * static_cast<int64_t>(sizes[k]);
  }
  for_each_row<N>(layout.ndim, layout.outer_sizes, bases, strides, sizes,
                  LoopOrder::kFirstOperandMemory, [&](const RowPointers<N>& row, int64_t n) {
                    group_fn(row.ptrs, dim_strides, row.strides, n);
                  });
}

template <size_t N>
std::array<char*, N> offset_starts(const std::array<char*, N>& starts,
                                   const std::array<int64_t, N>& strides, int64_t steps) {
  std::array<char*, N> result;
  for (size_t k = 0; k < N; ++k) result[k] = starts[k] + steps * strides[k];
  return result;
}

// fp32 uses the vectorisable exp; float64 keeps libm's.
inline float exp_of(float x) { return vector_exp(x); }
inline double exp_of(double x) { return std::exp(x); }

// Reductions with independent lanes, so they vectorise without reassociation flags.
constexpr int kLanes = 8;

template <typename C>
C max_of(const C* values, int64_t length) {
  C lanes[kLanes];
  for (int lane = 0; lane < kLanes; ++lane) lanes[lane] = -std::numeric_limits<C>::infinity();
  int64_t j = 0;
  for (; j + kLanes <= length; j += kLanes) {
    for (int lane = 0; lane < kLanes; ++lane) {
      lanes[lane] = values[j + lane] > lanes[lane] ? values[j + lane] : lanes[lane];
    }
  }
  C max = -std::numeric_limits<C>::infinity();
  for (; j < length; ++j) max = values[j] > max ? values[j] : max;
  for (int lane = 0; lane < kLanes; ++lane) max = lanes[lane] > max ? lanes[lane] : max;
  return max;
}

// The sum of term(j) for j < length, in double. Terms are added in float lanes over short
// blocks (full vector width) and the block sums in double, which keeps the error small.
template <typename C, typename Term>
double blocked_sum(int64_t length, const Term& term) {
  constexpr int64_t kBlock = 16 * kLanes;
  double total = 0.0;
  int64_t j = 0;
  for (; j + kBlock <= length; j += kBlock) {
    C lanes[2 * kLanes] = {};
    for (int64_t i = 0; i < kBlock; i += 2 * kLanes) {
      for (int lane = 0; lane < 2 * kLanes; ++lane) lanes[lane] += term(j + i + lane);
    }
    double block = 0.0;
    for (int lane = 0; lane < 2 * kLanes; ++lane) block += lanes[lane];
    total += block;
  }
  for (; j < length; ++j) total += term(j);
  return total;
}

template <typename C>
double sum_of(const C* values, int64_t length) {
  return blocked_sum<C>(length, [values](int64_t j) { return values[j]; });
}

// NaN anywhere makes the slice NaN through exp; an all -inf slice gives NaN, as in PyTorch.
template <typename C>
void softmax_in_place(C* values, C* scratch, int64_t length, bool log) {
  const C max = max_of(values, length);
  for (int64_t j = 0; j < length; ++j) scratch[j] = exp_of(values[j] - max);
  const double sum = sum_of(scratch, length);
  if (log) {
    const C log_sum = static_cast<C>(std::log(sum));
    for (int64_t j = 0; j < length; ++j) values[j] = values[j] - max - log_sum;
    return;
  }
  const C inverse_sum = static_cast<C>(1.0 / sum);
  for (int64_t j = 0; j < length; ++j) values[j] = scratch[j] * inverse_sum;
}

// One slice when input and output are dense in the compute type: out may alias in.
template <typename C>
void softmax_dense(C* out, const C* in, int64_t length, bool log) {
  const C max = max_of(in, length);
  if (log) {
    // out may alias in, so the exponentials are summed without being stored.
    const double sum = blocked_sum<C>(length, [in, max](int64_t j) { return exp_of(in[j] - max); });
    const C log_sum = static_cast<C>(std::log(sum));
    for (int64_t i = 0; i < length; ++i) out[i] = in[i] - max - log_sum;
    return;
  }
  for (int64_t j = 0; j < length; ++j) out[j] = exp_of(in[j] - max);
  const C inverse_sum = static_cast<C>(1.0 / sum_of(out, length));
  for (int64_t j = 0; j < length; ++j) out[j] *= inverse_sum;
}

// Slices processed side by side when they interleave in memory (softmax over a dim that is
// not innermost): loading a [length, kTileWidth] tile reads whole cache lines.
constexpr int64_t kTileWidth = 16;

// Softmax of each column of tile ([length, kTileWidth] row-major), vectorised across columns.
template <typename C>
void softmax_tile_in_place(C* tile, int64_t length, bool log) {
  C max[kTileWidth];
  double sum[kTileWidth] = {};
  for (int64_t w = 0; w < kTileWidth; ++w) max[w] = -std::numeric_limits<C>::infinity();
  for (int64_t i = 0; i < length; ++i) {
    const C* row = tile + i * kTileWidth;
    for (int64_t w = 0; w < kTileWidth; ++w) max[w] = row[w] > max[w] ? row[w] : max[w];
  }
  if (log) {
    for (int64_t i = 0; i < length; ++i) {
      const C* row = tile + i * kTileWidth;
      for (int64_t w = 0; w < kTileWidth; ++w) sum[w] += exp_of(row[w] - max[w]);
    }
    C log_sum[kTileWidth];
    for (int64_t w = 0; w < kTileWidth; ++w) log_sum[w] = static_cast<C>(std::log(sum[w]));
    for (int64_t i = 0; i < length; ++i) {
      C* row = tile + i * kTileWidth;
      for (int64_t w = 0; w < kTileWidth; ++w) row[w] = row[w] - max[w] - log_sum[w];
    }
    return;
  }
  for (int64_t i = 0; i < length; ++i) {
    C* row = tile + i * kTileWidth;
    for (int64_t w = 0; w < kTileWidth; ++w) {
      row[w] = exp_of(row[w] - max[w]);
      sum[w] += row[w];
    }
  }
  C inverse_sum[kTileWidth];
  for (int64_t w = 0; w < kTileWidth; ++w) inverse_sum[w] = static_cast<C>(1.0 / sum[w]);
  for (int64_t i = 0; i < length; ++i) {
    C* row = tile + i * kTileWidth;
    for (int64_t w = 0; w < kTileWidth; ++w) row[w] *= inverse_sum[w];
  }
}

template <typename C>
void run_softmax(const TensorView& out, const TensorView& in, const SliceLayout& layout, bool log) {
  const DType compute_dtype = std::is_same_v<C, float> ? DType::Float32 : DType::Float64;
  const size_t length = static_cast<size_t>(layout.length);
  std::vector<C> values, scratch, tile;
  for_each_slice_group<2>(
      layout, {&out, &in},
      [&](const std::array<char*, 2>& starts, const std::array<int64_t, 2>& dim_strides,
          const std::array<int64_t, 2>& neighbours, int64_t count) {
        const bool interleaved =
            count > 1 && std::llabs(neighbours[1]) < std::llabs(dim_strides[1]);
        if (!interleaved) {
          values.resize(length);
          scratch.resize(length);
          const auto dense = static_cast<int64_t>(sizeof(C));
          const bool direct = in.dtype == out.dtype && out.dtype == compute_dtype &&
                              dim_strides[0] == dense && dim_strides[1] == dense;
          for (int64_t s = 0; s < count; ++s) {
            const auto slice = offset_starts(starts, neighbours, s);
            if (direct) {
              softmax_dense(reinterpret_cast<C*>(slice[0]), reinterpret_cast<const C*>(slice[1]),
                            layout.length, log);
              continue;
            }
            load_row<C>(values.data(), slice[1], dim_strides[1], in.dtype, layout.length);
            softmax_in_place(values.data(), scratch.data(), layout.length, log);
            store_row<C>(slice[0], dim_strides[0], out.dtype, values.data(), layout.length);
          }
          return;
        }
        // Zero-initialised so unused columns of a partial tile hold harmless values.
        tile.resize(length * kTileWidth, C(0));
        for (int64_t first = 0; first < count; first += kTileWidth) {
          const int64_t width = std::min(kTileWidth, count - first);
          const auto group = offset_starts(starts, neighbours, first);
          for (int64_t i = 0; i < layout.length; ++i) {
            load_row<C>(tile.data() + i * kTileWidth, group[1] + i * dim_strides[1], neighbours[1],
                        in.dtype, width);
          }
          softmax_tile_in_place(tile.data(), layout.length, log);
          for (int64_t i = 0; i < layout.length; ++i) {
            store_row<C>(group[0] + i * dim_strides[0], neighbours[0], out.dtype,
                         tile.data() + i * kTileWidth, width);
          }
        }
      });
}

// One slice's gradient when every operand is dense in the compute type: no staging copies.
// grad_in may alias grad_out.
template <typename C>
void softmax_backward_dense(C* grad_in, const C* grad_out, const C* out, int64_t length, bool log) {
  if (log) {
    const C total = static_cast<C>(sum_of(grad_out, length));
    for (int64_t j = 0; j < length; ++j) grad_in[j] = grad_out[j] - exp_of(out[j]) * total;
    return;
  }
  double dot_lanes[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= length; j += kLanes) {
    for (int lane = 0; lane < kLanes; ++lane) {
      dot_lanes[lane] += static_cast<double>(grad_out[j + lane]) * out[j + lane];
    }
  }
  double sum = 0.0;
  for (; j < length; ++j) sum += static_cast<double>(grad_out[j]) * out[j];
  for (int lane = 0; lane < kLanes; ++lane) sum += dot_lanes[lane];
  const C dot = static_cast<C>(sum);
  for (int64_t i = 0; i < length; ++i) grad_in[i] = out[i] * (grad_out[i] - dot);
}

template <typename C>
void run_softmax_backward(const TensorView& grad_in, const TensorView& grad_out,
                          const TensorView& out, const SliceLayout& layout, bool log) {
  const size_t length = static_cast<size_t>(layout.length);
  std::vector<C> grads(length), outputs(length);
  const bool all_compute_type =
      grad_in.dtype == out.dtype && grad_out.dtype == out.dtype &&
      out.dtype == (std::is_same_v<C, float> ? DType::Float32 : DType::Float64);
  const auto slice_fn = [&](const std::array<char*, 3>& starts,
                            const std::array<int64_t, 3>& strides) {
    const auto dense = static_cast<int64_t>(sizeof(C));
    if (all_compute_type && strides[0] == dense && strides[1] == dense && strides[2] == dense) {
      softmax_backward_dense(reinterpret_cast<C*>(starts[0]), reinterpret_cast<const C*>(starts[1]),
                             reinterpret_cast<const C*>(starts[2]), layout.length, log);
      return;
    }
    load_row<C>(grads.data(), starts[1], strides[1], grad_out.dtype, layout.length);
    load_row<C>(outputs.data(), starts[2], strides[2], out.dtype, layout.length);
    if (log) {
      const C total = static_cast<C>(sum_of(grads.data(), layout.length));
      for (size_t j = 0; j < length; ++j) {
        grads[j] = grads[j] - exp_of(outputs[j]) * total;
      }
    } else {
      double dot_lanes[kLanes] = {};
      size_t j = 0;
      for (; j + kLanes <= length; j += kLanes) {
        for (int lane = 0; lane < kLanes; ++lane) {
          dot_lanes[lane] += static_cast<double>(grads[j + lane]) * outputs[j + lane];
        }
      }
      double sum = 0.0;
      for (; j < length; ++j) sum += static_cast<double>(grads[j]) * outputs[j];
      for (int lane = 0; lane < kLanes; ++lane) sum += dot_lanes[lane];
      const C dot = static_cast<C>(sum);
      for (size_t i = 0; i < length; ++i) grads[i] = outputs[i] * (grads[i] - dot);
    }
    store_row<C>(starts[0], strides[0], grad_in.dtype, grads.data(), layout.length);
  };
  for_each_slice_group<3>(
      layout, {&grad_in, &grad_out, &out},
      [&](const std::array<char*, 3>& starts, const std::array<int64_t, 3>& dim_strides,
          const std::array<int64_t, 3>& neighbours, int64_t count) {
        for (int64_t s = 0; s < count; ++s) {
          slice_fn(offset_starts(starts, neighbours, s), dim_strides);
        }
      });
}

bool wants_double(DType a, DType b) { return a == DType::Float64 || b == DType::Float64; }

}  // namespace

void softmax(const TensorView& out, const TensorView& in, int dim, bool log) {
  check_same_shape(out, in);
  if (!is_floating(out.dtype) || !is_floating(in.dtype)) {
    throw std::invalid_argument("openneuron kernels: softmax needs floating dtypes");
  }
  const SliceLayout layout = slice_layout(in, dim);
  if (in.numel() == 0) return;
  parallel_over_views<2>(
      {out, in},
      [&](const std::array<TensorView, 2>& part) {
        const SliceLayout part_layout = slice_layout(part[1], dim);
        if (wants_double(out.dtype, in.dtype)) {
          run_softmax<double>(part[0], part[1], part_layout, log);
        } else {
          run_softmax<float>(part[0], part[1], part_layout, log);
        }
      },
      layout.dim);
}

void softmax_backward(const TensorView& grad_in, const TensorView& grad_out, const TensorView& out,
                      int dim, bool log) {
  check_same_shape(grad_in, grad_out);
  check_same_shape(grad_in, out);
  if (!is_floating(grad_in.dtype) || !is_floating(grad_out.dtype) || !is_floating(out.dtype)) {
    throw std::invalid_argument("openneuron kernels: softmax_backward needs floating dtypes");
  }
  const SliceLayout layout = slice_layout(out, dim);
  if (out.numel() == 0) return;
  parallel_over_views<3>(
      {grad_in, grad_out, out},
      [&](const std::array<TensorView, 3>& part) {
        const SliceLayout part_layout = slice_layout(part[2], dim);
        if (wants_double(grad_in.dtype, out.dtype)) {
          run_softmax_backward<double>(part[0], part[1], part[2], part_layout, log);
        } else {
          run_softmax_backward<float>(part[0], part[1], part[2], part_layout, log);
        }
      },
      layout.dim);
}

}  // namespace openneuron::kernels
