// Adaptive max pooling: planes split across threads, each read as dense fp32.
#include "kernels/nn/adaptive_max_pool.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "kernels/core/dense_float.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {

void adaptive_max_pool2d_forward(const TensorView& out, const TensorView& indices,
                                 const TensorView& input) {
  const bool alike = out.ndim == 4 && input.ndim == 4 && indices.ndim == 4 &&
                     indices.dtype == DType::Int64 && out.sizes[0] == input.sizes[0] &&
                     out.sizes[1] == input.sizes[1];
  bool same_shape = alike;
  for (int d = 0; alike && d < 4; ++d) same_shape = same_shape && indices.sizes[d] == out.sizes[d];
  if (!same_shape) {
    throw std::invalid_argument(
        "openneuron kernels: adaptive_max_pool2d: views must be [N, C, H, W] alike, indices "
        "int64 in out's shape");
  }
  if (out.numel() == 0) return;
  const int64_t H = input.sizes[2], W = input.sizes[3], OH = out.sizes[2], OW = out.sizes[3];
  if (H == 0 || W == 0) {
    throw std::invalid_argument("openneuron kernels: adaptive_max_pool2d: empty input plane");
  }
  const int64_t C = out.sizes[1];
  const DenseFloatInput in(input);
  DenseFloatOutput result(out);
  int64_t* index_data = static_cast<int64_t*>(indices.data);
  parallel_for(0, out.sizes[0] * C, 4, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* src = in.data() + plane * H * W;
      float* dst = result.data() + plane * OH * OW;
      int64_t* idx =
          index_data + (plane / C) * indices.strides[0] + (plane % C) * indices.strides[1];
      for (int64_t oh = 0; oh < OH; ++oh) {
        const int64_t h0 = oh * H / OH, h1 = ((oh + 1) * H + OH - 1) / OH;
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t w0 = ow * W / OW, w1 = ((ow + 1) * W + OW - 1) / OW;
          float best = -std::numeric_limits<float>::infinity();
          int64_t best_index = h0 * W + w0;
          for (int64_t ih = h0; ih < h1; ++ih) {
            for (int64_t iw = w0; iw < w1; ++iw) {
              const float value = src[ih * W + iw];
              if (value > best || std::isnan(value)) {
                best = value;
                best_index = ih * W + iw;
              }
            }
          }
          dst[oh * OW + ow] = best;
          idx[oh * indices.strides[2] + ow * indices.strides[3]] = best_index;
        }
      }
    }
  });
  result.commit();
}

}  // namespace openneuron::kernels
