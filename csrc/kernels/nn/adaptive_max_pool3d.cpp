// Adaptive 3-D max pooling: volumes split across threads, each read as dense fp32.
#include "kernels/nn/adaptive_max_pool3d.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "kernels/core/dense_float.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

struct Window {
  int64_t begin, end;
};

// Output position o of O over an input of n: [floor(o*n/O), ceil((o+1)*n/O)).
Window window(int64_t o, int64_t n, int64_t count) {
  return {o * n / count, ((o + 1) * n + count - 1) / count};
}

}  // namespace

void adaptive_max_pool3d_forward(const TensorView& out, const TensorView& indices,
                                 const TensorView& input) {
  bool alike = out.ndim == 5 && input.ndim == 5 && indices.ndim == 5 &&
               indices.dtype == DType::Int64 && out.sizes[0] == input.sizes[0] &&
               out.sizes[1] == input.sizes[1];
  for (int d = 0; alike && d < 5; ++d) alike = indices.sizes[d] == out.sizes[d];
  if (!alike) {
    throw std::invalid_argument(
        "openneuron kernels: adaptive_max_pool3d: views must be [N, C, D, H, W] alike, indices "
        "int64 in out's shape");
  }
  if (out.numel() == 0) return;
  const int64_t D = input.sizes[2], H = input.sizes[3], W = input.sizes[4];
  const int64_t OD = out.sizes[2], OH = out.sizes[3], OW = out.sizes[4];
  if (D == 0 || H == 0 || W == 0) {
    throw std::invalid_argument("openneuron kernels: adaptive_max_pool3d: empty input volume");
  }
  const int64_t C = out.sizes[1];
  const DenseFloatInput in(input);
  DenseFloatOutput result(out);
  auto* index_data = static_cast<int64_t*>(indices.data);
  parallel_for(0, out.sizes[0] * C, 1, [&](int64_t begin, int64_t end) {
    for (int64_t volume = begin; volume < end; ++volume) {
      const float* src = in.data() + volume * D * H * W;
      float* dst = result.data() + volume * OD * OH * OW;
      int64_t* idx =
          index_data + (volume / C) * indices.strides[0] + (volume % C) * indices.strides[1];
      for (int64_t od = 0; od < OD; ++od) {
        const Window wd = window(od, D, OD);
        for (int64_t oh = 0; oh < OH; ++oh) {
          const Window wh = window(oh, H, OH);
          for (int64_t ow = 0; ow < OW; ++ow) {
            const Window ww = window(ow, W, OW);
            float best = -std::numeric_limits<float>::infinity();
            int64_t best_index = (wd.begin * H + wh.begin) * W + ww.begin;
            for (int64_t id = wd.begin; id < wd.end; ++id) {
              for (int64_t ih = wh.begin; ih < wh.end; ++ih) {
                for (int64_t iw = ww.begin; iw < ww.end; ++iw) {
                  const int64_t at = (id * H + ih) * W + iw;
                  const float value = src[at];
                  if (value > best || std::isnan(value)) {
                    best = value;
                    best_index = at;
                  }
                }
              }
            }
            dst[(od * OH + oh) * OW + ow] = best;
            idx[od * indices.strides[2] + oh * indices.strides[3] + ow * indices.strides[4]] =
                best_index;
          }
        }
      }
    }
  });
  result.commit();
}

}  // namespace openneuron::kernels
