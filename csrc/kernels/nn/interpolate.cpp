// Interpolation kernels: per-axis tap tables, then a nested weighted sum per output (forward)
// or a scatter onto the taps (backward), over dense fp32 [N*C, D, H, W] planes.
#include "kernels/nn/interpolate.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/core/dense_float.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

constexpr int kMaxTaps = 4;

// For each output index along one axis: `count` source indices (already clamped into the
// input) and their weights, stored output-major.
struct AxisTaps {
  int count = 1;
  std::vector<int64_t> index;
  std::vector<float> weight;
};

// PyTorch's input/output ratio: 1/scale when the caller gave one, else in/out (in fp32).
float size_ratio(double scale, int64_t in_size, int64_t out_size) {
  return scale > 0.0 ? static_cast<float>(1.0 / scale)
                     : static_cast<float>(in_size) / static_cast<float>(out_size);
}

// The ratio linear and cubic use: align_corners maps the corner pixels onto each other.
float area_ratio(bool align_corners, double scale, int64_t in_size, int64_t out_size) {
  if (!align_corners) return size_ratio(scale, in_size, out_size);
  return out_size > 1 ? static_cast<float>(in_size - 1) / static_cast<float>(out_size - 1) : 0.0f;
}

// The fractional source coordinate of output `o` (negative ones clamped to 0 except for cubic,
// whose weights depend on them).
float source_coordinate(float ratio, int64_t o, bool align_corners, bool cubic) {
  if (align_corners) return ratio * static_cast<float>(o);
  const float source = ratio * (static_cast<float>(o) + 0.5f) - 0.5f;
  return (!cubic && source < 0.0f) ? 0.0f : source;
}

// Splits a source coordinate into its floor (capped at the last index) and the fraction.
void floor_and_fraction(float source, int64_t in_size, int64_t& index, float& fraction) {
  index = std::min(static_cast<int64_t>(std::floor(source)), in_size - 1);
  fraction = std::min(std::max(source - static_cast<float>(index), 0.0f), 1.0f);
}

int64_t nearest_source(InterpolateMode mode, int64_t o, int64_t in_size, int64_t out_size,
                       double scale) {
  if (mode == InterpolateMode::Nearest) {
    // PyTorch's integer shortcuts (no float rounding) for the identity and for doubling.
    if (out_size == in_size) return o;
    if (out_size == 2 * in_size) return o >> 1;
    const float ratio = size_ratio(scale, in_size, out_size);
    return std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * ratio)), in_size - 1);
  }
  const float ratio = size_ratio(scale, in_size, out_size);
  // The half-pixel offset is added in double before rounding to fp32, as PyTorch does.
  const float source = static_cast<float>((static_cast<double>(o) + 0.5) * ratio);
  return std::min(static_cast<int64_t>(std::floor(source)), in_size - 1);
}

// Keys' cubic convolution weights (A = -0.75) of the 4 taps around a fraction t.
void cubic_weights(float t, float w[4]) {
  const float A = -0.75f;
  auto near = [A](float x) { return ((A + 2.0f) * x - (A + 3.0f)) * x * x + 1.0f; };
  auto far = [A](float x) { return ((A * x - 5.0f * A) * x + 8.0f * A) * x - 4.0f * A; };
  w[0] = far(t + 1.0f);
  w[1] = near(t);
  w[2] = near(1.0f - t);
  w[3] = far((1.0f - t) + 1.0f);
}

AxisTaps axis_taps(const InterpolateParams& p, int64_t in_size, int64_t out_size, double scale) {
  AxisTaps taps;
  switch (p.mode) {
    case InterpolateMode::Nearest:
    case InterpolateMode::NearestExact:
      taps.count = 1;
      break;
    case InterpolateMode::Linear:
      taps.count = 2;
      break;
    case InterpolateMode::Cubic:
      taps.count = 4;
      break;
  }
  taps.index.resize(static_cast<size_t>(out_size * taps.count));
  taps.weight.resize(taps.index.size());
  const bool cubic = p.mode == InterpolateMode::Cubic;
  const float ratio = area_ratio(p.align_corners, scale, in_size, out_size);
  for (int64_t o = 0; o < out_size; ++o) {
    int64_t* index = taps.index.data() + o * taps.count;
    float* weight = taps.weight.data() + o * taps.count;
    if (taps.count == 1) {
      index[0] = nearest_source(p.mode, o, in_size, out_size, scale);
      weight[0] = 1.0f;
    } else if (!cubic) {
      if (out_size == in_size) {  // PyTorch copies when the sizes agree
        index[0] = index[1] = o;
        weight[0] = 1.0f;
        weight[1] = 0.0f;
        continue;
      }
      int64_t i0;
      float fraction;
      floor_and_fraction(source_coordinate(ratio, o, p.align_corners, false), in_size, i0,
                         fraction);
      index[0] = i0;
      index[1] = i0 < in_size - 1 ? i0 + 1 : i0;
      weight[0] = 1.0f - fraction;
      weight[1] = fraction;
    } else {
      int64_t i0;
      float fraction;
      floor_and_fraction(source_coordinate(ratio, o, p.align_corners, true), in_size, i0, fraction);
      cubic_weights(fraction, weight);
      for (int k = 0; k < 4; ++k) {
        index[k] = std::clamp<int64_t>(i0 - 1 + k, 0, in_size - 1);
      }
    }
  }
  return taps;
}

// Sizes of a [N, C, *spatial] view padded to 3 spatial dims (leading 1s).
struct Geometry {
  int64_t planes = 0;
  int64_t in[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};
  AxisTaps taps[3];
};

Geometry geometry(const TensorView& out, const TensorView& input, const InterpolateParams& p) {
  if (out.ndim != input.ndim || out.ndim < 3 || out.ndim > 5 || out.sizes[0] != input.sizes[0] ||
      out.sizes[1] != input.sizes[1]) {
    throw std::invalid_argument(
        "openneuron kernels: interpolate: views must be [N, C, *spatial] alike with 1 to 3 "
        "spatial dims");
  }
  if (p.mode == InterpolateMode::Cubic && out.ndim != 4) {
    throw std::invalid_argument("openneuron kernels: interpolate: cubic is 2-D only");
  }
  Geometry g;
  g.planes = out.sizes[0] * out.sizes[1];
  const int spatial = out.ndim - 2;
  for (int a = 0; a < spatial; ++a) {
    const int axis = 3 - spatial + a;
    g.in[axis] = input.sizes[2 + a];
    g.out[axis] = out.sizes[2 + a];
  }
  for (int axis = 0; axis < 3; ++axis) {
    const int user_axis = axis - (3 - spatial);
    if (user_axis < 0) continue;  // a padded axis: one tap at index 0, weight 1
    if (g.in[axis] <= 0 || g.out[axis] <= 0) {
      throw std::invalid_argument("openneuron kernels: interpolate: empty spatial size");
    }
    g.taps[axis] = axis_taps(p, g.in[axis], g.out[axis], p.scales[user_axis]);
  }
  for (int axis = 0; axis < 3 - spatial; ++axis) {
    g.taps[axis].index = {0};
    g.taps[axis].weight = {1.0f};
  }
  return g;
}

// One output row (fixed plane, od, oh) as the nested sum over depth, height, then width taps,
// innermost first, the order PyTorch's CPU kernel sums in.
template <int kWidthTaps>
void forward_row(float* dst, const float* plane, const Geometry& g, int64_t od, int64_t oh) {
  const AxisTaps &td = g.taps[0], &th = g.taps[1], &tw = g.taps[2];
  const int64_t H = g.in[1], W = g.in[2], OW = g.out[2];
  const float* rows[kMaxTaps * kMaxTaps];
  float depth_weight[kMaxTaps], height_weight[kMaxTaps];
  for (int d = 0; d < td.count; ++d) {
    depth_weight[d] = td.weight[od * td.count + d];
    for (int h = 0; h < th.count; ++h) {
      rows[d * th.count + h] =
          plane + (td.index[od * td.count + d] * H + th.index[oh * th.count + h]) * W;
    }
  }
  for (int h = 0; h < th.count; ++h) height_weight[h] = th.weight[oh * th.count + h];
  const int64_t* w_index = tw.index.data();
  const float* w_weight = tw.weight.data();
  for (int64_t ow = 0; ow < OW; ++ow) {
    const int64_t* wi = w_index + ow * kWidthTaps;
    const float* ww = w_weight + ow * kWidthTaps;
    float total = 0.0f;
    for (int d = 0; d < td.count; ++d) {
      float over_height = 0.0f;
      for (int h = 0; h < th.count; ++h) {
        const float* row = rows[d * th.count + h];
        float over_width = row[wi[0]] * ww[0];
        for (int k = 1; k < kWidthTaps; ++k) over_width += row[wi[k]] * ww[k];
        over_height =
            h == 0 ? over_width * height_weight[h] : over_height + over_width * height_weight[h];
      }
      total = d == 0 ? over_height * depth_weight[d] : total + over_height * depth_weight[d];
    }
    dst[ow] = total;
  }
}

template <int kWidthTaps>
void forward_all(float* out, const float* in, const Geometry& g) {
  const int64_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  const int64_t rows = g.planes * OD * OH;
  // Rows are independent, so a single large plane still spreads over every core.
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(OW, 1));
  parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t plane = row / (OD * OH);
      const int64_t od = (row / OH) % OD, oh = row % OH;
      forward_row<kWidthTaps>(out + row * OW, in + plane * in_plane, g, od, oh);
    }
  });
}

// Each output's gradient goes to its taps in PyTorch's CPU order, so sums at clamped borders
// round alike: outputs in row-major order; per output, depth/height taps outside width taps
// with weight (wd * wh * ww) * g, except cubic, whose CPU kernel takes width taps outermost
// with weight (g * wh) * ww.
template <int kWidthTaps, bool kCubic>
void backward_all(float* grad_in, const float* grad_out, const Geometry& g) {
  const AxisTaps &td = g.taps[0], &th = g.taps[1], &tw = g.taps[2];
  const int64_t D = g.in[0], H = g.in[1], W = g.in[2];
  const int64_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(OD * OH * OW, 1));
  parallel_for(0, g.planes, grain, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      float* dst = grad_in + plane * D * H * W;
      const float* src = grad_out + plane * OD * OH * OW;
      std::fill(dst, dst + D * H * W, 0.0f);
      for (int64_t od = 0; od < OD; ++od) {
        for (int64_t oh = 0; oh < OH; ++oh) {
          const float* g_row = src + (od * OH + oh) * OW;
          float* rows[kMaxTaps * kMaxTaps];
          float row_weight[kMaxTaps * kMaxTaps];
          int row_count = 0;
          for (int d = 0; d < td.count; ++d) {
            for (int h = 0; h < th.count; ++h) {
              rows[row_count] =
                  dst + (td.index[od * td.count + d] * H + th.index[oh * th.count + h]) * W;
              row_weight[row_count++] = td.weight[od * td.count + d] * th.weight[oh * th.count + h];
            }
          }
          for (int64_t ow = 0; ow < OW; ++ow) {
            const float grad = g_row[ow];
            const int64_t* wi = tw.index.data() + ow * kWidthTaps;
            const float* ww = tw.weight.data() + ow * kWidthTaps;
            if constexpr (kCubic) {
              for (int k = 0; k < kWidthTaps; ++k) {
                for (int r = 0; r < row_count; ++r) rows[r][wi[k]] += grad * row_weight[r] * ww[k];
              }
            } else {
              for (int r = 0; r < row_count; ++r) {
                for (int k = 0; k < kWidthTaps; ++k) rows[r][wi[k]] += row_weight[r] * ww[k] * grad;
              }
            }
          }
        }
      }
    }
  });
}

// Nearest forward is a pure gather: elements are copied as bits in the views' own layout, so
// 16-bit and channels_last tensors need no fp32 round trip or transpose.
template <typename Bits>
void gather_nearest(const TensorView& out, const TensorView& input, const Geometry& g) {
  const int spatial = out.ndim - 2;
  int64_t in_stride[3] = {0, 0, 0}, out_stride[3] = {0, 0, 0};
  for (int a = 0; a < spatial; ++a) {
    in_stride[3 - spatial + a] = input.strides[2 + a];
    out_stride[3 - spatial + a] = out.strides[2 + a];
  }
  const int64_t C = out.sizes[1], OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const int64_t* d_index = g.taps[0].index.data();
  const int64_t* h_index = g.taps[1].index.data();
  const int64_t* w_index = g.taps[2].index.data();
  const Bits* src_base = static_cast<const Bits*>(input.data);
  Bits* dst_base = static_cast<Bits*>(out.data);
  const int64_t rows = g.planes * OD * OH;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(OW, 1));
  parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t plane = row / (OD * OH), n = plane / C, c = plane % C;
      const int64_t od = (row / OH) % OD, oh = row % OH;
      const Bits* src = src_base + n * input.strides[0] + c * input.strides[1] +
                        d_index[od] * in_stride[0] + h_index[oh] * in_stride[1];
      Bits* dst = dst_base + n * out.strides[0] + c * out.strides[1] + od * out_stride[0] +
                  oh * out_stride[1];
      const int64_t src_w = in_stride[2], dst_w = out_stride[2];
      for (int64_t ow = 0; ow < OW; ++ow) dst[ow * dst_w] = src[w_index[ow] * src_w];
    }
  });
}

}  // namespace

void interpolate_forward(const TensorView& out, const TensorView& input,
                         const InterpolateParams& params) {
  if (out.numel() == 0) return;
  const Geometry g = geometry(out, input, params);
  if (g.taps[2].count == 1 && out.dtype == input.dtype) {
    switch (element_size(out.dtype)) {
      case 2:
        return gather_nearest<uint16_t>(out, input, g);
      case 4:
        return gather_nearest<uint32_t>(out, input, g);
      default:
        break;
    }
  }
  const DenseFloatInput in(input);
  DenseFloatOutput result(out);
  switch (g.taps[2].count) {
    case 1:
      forward_all<1>(result.data(), in.data(), g);
      break;
    case 2:
      forward_all<2>(result.data(), in.data(), g);
      break;
    default:
      forward_all<4>(result.data(), in.data(), g);
      break;
  }
  result.commit();
}

void interpolate_backward(const TensorView& grad_input, const TensorView& grad_out,
                          const InterpolateParams& params) {
  if (grad_input.numel() == 0) return;
  const Geometry g = geometry(grad_out, grad_input, params);
  const DenseFloatInput go(grad_out);
  DenseFloatOutput result(grad_input);
  switch (g.taps[2].count) {
    case 1:
      backward_all<1, false>(result.data(), go.data(), g);
      break;
    case 2:
      backward_all<2, false>(result.data(), go.data(), g);
      break;
    default:
      backward_all<4, true>(result.data(), go.data(), g);
      break;
  }
  result.commit();
}

}  // namespace openneuron::kernels
