// Pooling kernels: one parallel task range over the N*C planes, each plane dense fp32.
// (Max pooling forward lives in pooling_max.cpp.)
#include "kernels/nn/pooling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "kernels/core/dense_float.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

void check_4d(const TensorView& a, const TensorView& b) {
  if (a.ndim != 4 || b.ndim != 4 || a.sizes[0] != b.sizes[0] || a.sizes[1] != b.sizes[1]) {
    throw std::invalid_argument("openneuron kernels: pooling: views must be [N, C, H, W] alike");
  }
}

// The clipped window of output cell `o` along one axis, and its divisor contribution.
struct AvgWindow {
  int64_t begin, end, padded_extent;
};
AvgWindow avg_window(int64_t o, int64_t in_size, int64_t kernel, int64_t stride, int64_t pad) {
  const int64_t start = o * stride - pad;
  const int64_t stop = std::min(start + kernel, in_size + pad);
  return {std::max<int64_t>(start, 0), std::min(stop, in_size), stop - start};
}

float avg_divisor(const AvgWindow& wh, const AvgWindow& ww, const Pool2dParams& p) {
  if (p.divisor_override != 0) return static_cast<float>(p.divisor_override);
  if (p.count_include_pad) return static_cast<float>(wh.padded_extent * ww.padded_extent);
  return static_cast<float>((wh.end - wh.begin) * (ww.end - ww.begin));
}

int64_t adaptive_start(int64_t o, int64_t in_size, int64_t out_size) {
  return (o * in_size) / out_size;
}
int64_t adaptive_end(int64_t o, int64_t in_size, int64_t out_size) {
  return ((o + 1) * in_size + out_size - 1) / out_size;
}

}  // namespace

void max_pool2d_backward(const TensorView& grad_input, const TensorView& grad_out,
                         const TensorView& indices) {
  check_4d(grad_input, grad_out);
  if (indices.dtype != DType::Int64 || !indices.is_contiguous()) {
    throw std::invalid_argument("openneuron kernels: max_pool2d: indices must be dense int64");
  }
  if (grad_input.numel() == 0) return;
  const int64_t in_plane = grad_input.sizes[2] * grad_input.sizes[3];
  const int64_t out_plane = grad_out.sizes[2] * grad_out.sizes[3];
  const DenseFloatInput go(grad_out);
  DenseFloatOutput result(grad_input);
  const int64_t* index_data = static_cast<const int64_t*>(indices.data);
  parallel_for(0, grad_input.sizes[0] * grad_input.sizes[1], 4, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      float* dst = result.data() + plane * in_plane;
      std::fill(dst, dst + in_plane, 0.0f);
      const float* src = go.data() + plane * out_plane;
      const int64_t* idx = index_data + plane * out_plane;
      for (int64_t i = 0; i < out_plane; ++i) {
        if (idx[i] >= 0 && idx[i] < in_plane) dst[idx[i]] += src[i];
      }
    }
  });
  result.commit();
}

void avg_pool2d_forward(const TensorView& out, const TensorView& input, const Pool2dParams& p) {
  check_4d(out, input);
  if (out.numel() == 0) return;
  const int64_t H = input.sizes[2], W = input.sizes[3], OH = out.sizes[2], OW = out.sizes[3];
  const DenseFloatInput in(input);
  DenseFloatOutput result(out);
  parallel_for(0, out.sizes[0] * out.sizes[1], 4, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* src = in.data() + plane * H * W;
      float* dst = result.data() + plane * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        const AvgWindow wh = avg_window(oh, H, p.kernel[0], p.stride[0], p.padding[0]);
        for (int64_t ow = 0; ow < OW; ++ow) {
          const AvgWindow ww = avg_window(ow, W, p.kernel[1], p.stride[1], p.padding[1]);
          if (wh.begin >= wh.end || ww.begin >= ww.end) {
            dst[oh * OW + ow] = 0.0f;
            continue;
          }
          float sum = 0.0f;
          for (int64_t ih = wh.begin; ih < wh.end; ++ih) {
            for (int64_t iw = ww.begin; iw < ww.end; ++iw) sum += src[ih * W + iw];
          }
          dst[oh * OW + ow] = sum / avg_divisor(wh, ww, p);
        }
      }
    }
  });
  result.commit();
}

void avg_pool2d_backward(const TensorView& grad_input, const TensorView& grad_out,
                         const Pool2dParams& p) {
  check_4d(grad_input, grad_out);
  if (grad_input.numel() == 0) return;
  const int64_t H = grad_input.sizes[2], W = grad_input.sizes[3];
  const int64_t OH = grad_out.sizes[2], OW = grad_out.sizes[3];
  const DenseFloatInput go(grad_out);
  DenseFloatOutput result(grad_input);
  parallel_for(0, grad_input.sizes[0] * grad_input.sizes[1], 4, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* src = go.data() + plane * OH * OW;
      float* dst = result.data() + plane * H * W;
      std::fill(dst, dst + H * W, 0.0f);
      for (int64_t oh = 0; oh < OH; ++oh) {
        const AvgWindow wh = avg_window(oh, H, p.kernel[0], p.stride[0], p.padding[0]);
        for (int64_t ow = 0; ow < OW; ++ow) {
          const AvgWindow ww = avg_window(ow, W, p.kernel[1], p.stride[1], p.padding[1]);
          if (wh.begin >= wh.end || ww.begin >= ww.end) continue;
          const float share = src[oh * OW + ow] / avg_divisor(wh, ww, p);
          for (int64_t ih = wh.begin; ih < wh.end; ++ih) {
            for (int64_t iw = ww.begin; iw < ww.end; ++iw) dst[ih * W + iw] += share;
          }
        }
      }
    }
  });
  result.commit();
}

void adaptive_avg_pool2d_forward(const TensorView& out, const TensorView& input) {
  check_4d(out, input);
  if (out.numel() == 0) return;
  const int64_t H = input.sizes[2], W = input.sizes[3], OH = out.sizes[2], OW = out.sizes[3];
  const DenseFloatInput in(input);
  DenseFloatOutput result(out);
  parallel_for(0, out.sizes[0] * out.sizes[1], 4, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* src = in.data() + plane * H * W;
      float* dst = result.data() + plane * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        const int64_t h0 = adaptive_start(oh, H, OH), h1 = adaptive_end(oh, H, OH);
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t w0 = adaptive_start(ow, W, OW), w1 = adaptive_end(ow, W, OW);
          float sum = 0.0f;
          for (int64_t ih = h0; ih < h1; ++ih) {
            for (int64_t iw = w0; iw < w1; ++iw) sum += src[ih * W + iw];
          }
          dst[oh * OW + ow] = sum / static_cast<float>((h1 - h0) * (w1 - w0));
        }
      }
    }
  });
  result.commit();
}

void adaptive_avg_pool2d_backward(const TensorView& grad_input, const TensorView& grad_out) {
  check_4d(grad_input, grad_out);
  if (grad_input.numel() == 0) return;
  const int64_t H = grad_input.sizes[2], W = grad_input.sizes[3];
  const int64_t OH = grad_out.sizes[2], OW = grad_out.sizes[3];
  const DenseFloatInput go(grad_out);
  DenseFloatOutput result(grad_input);
  parallel_for(0, grad_input.sizes[0] * grad_input.sizes[1], 4, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* src = go.data() + plane * OH * OW;
      float* dst = result.data() + plane * H * W;
      std::fill(dst, dst + H * W, 0.0f);
      for (int64_t oh = 0; oh < OH; ++oh) {
        const int64_t h0 = adaptive_start(oh, H, OH), h1 = adaptive_end(oh, H, OH);
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t w0 = adaptive_start(ow, W, OW), w1 = adaptive_end(ow, W, OW);
          const float share = src[oh * OW + ow] / static_cast<float>((h1 - h0) * (w1 - w0));
          for (int64_t ih = h0; ih < h1; ++ih) {
            for (int64_t iw = w0; iw < w1; ++iw) dst[ih * W + iw] += share;
          }
        }
      }
    }
  });
  result.commit();
}

}  // namespace openneuron::kernels
