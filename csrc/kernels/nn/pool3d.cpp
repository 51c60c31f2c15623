// 3-D pooling on dense fp32 copies, one (n, c) volume per parallel_for item.
#include "kernels/nn/pool3d.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "kernels/core/dense_float.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

void check_5d(std::initializer_list<const TensorView*> views) {
  for (const TensorView* view : views) {
    if (view->ndim != 5)
      throw std::invalid_argument("openneuron kernels: pool3d: views must be 5-D");
  }
}

struct Volume {
  int64_t planes, d, h, w;
  int64_t size() const { return d * h * w; }
};

Volume volume_of(const TensorView& v) {
  return {v.sizes[0] * v.sizes[1], v.sizes[2], v.sizes[3], v.sizes[4]};
}

// The window of output cell o along one dim: [start, end) clipped to the input, and the
// unclipped size counted for count_include_pad (clipped at input + padding, as PyTorch does).
struct Span {
  int64_t start, end, padded;
};

Span avg_span(int64_t o, int64_t size, int d, const Pool3dParams& p) {
  int64_t start = o * p.stride[d] - p.padding[d];
  int64_t end = std::min(start + p.kernel[d], size + p.padding[d]);
  const int64_t padded = end - start;
  start = std::max<int64_t>(start, 0);
  end = std::min(end, size);
  return {start, end, padded};
}

float avg_divisor(const Span s[3], const Pool3dParams& p) {
  if (p.divisor_override != 0) return static_cast<float>(p.divisor_override);
  if (p.count_include_pad) return static_cast<float>(s[0].padded * s[1].padded * s[2].padded);
  return static_cast<float>((s[0].end - s[0].start) * (s[1].end - s[1].start) *
                            (s[2].end - s[2].start));
}

int64_t adaptive_start(int64_t o, int64_t in, int64_t out) { return (o * in) / out; }
int64_t adaptive_end(int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; }

}  // namespace

void max_pool3d_forward(const TensorView& out, const TensorView& indices, const TensorView& input,
                        const Pool3dParams& p) {
  check_5d({&out, &indices, &input});
  if (out.numel() == 0) return;
  const DenseFloatInput x(input);
  DenseFloatOutput result(out);
  int64_t* idx = static_cast<int64_t*>(indices.data);
  const Volume in = volume_of(input), o = volume_of(out);
  parallel_for(0, in.planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* src = x.data() + plane * in.size();
      for (int64_t od = 0; od < o.d; ++od)
        for (int64_t oh = 0; oh < o.h; ++oh)
          for (int64_t ow = 0; ow < o.w; ++ow) {
            float best = -std::numeric_limits<float>::infinity();
            int64_t best_index = -1;
            for (int64_t kd = 0; kd < p.kernel[0]; ++kd) {
              const int64_t id = od * p.stride[0] - p.padding[0] + kd * p.dilation[0];
              if (id < 0 || id >= in.d) continue;
              for (int64_t kh = 0; kh < p.kernel[1]; ++kh) {
                const int64_t ih = oh * p.stride[1] - p.padding[1] + kh * p.dilation[1];
                if (ih < 0 || ih >= in.h) continue;
                for (int64_t kw = 0; kw < p.kernel[2]; ++kw) {
                  const int64_t iw = ow * p.stride[2] - p.padding[2] + kw * p.dilation[2];
                  if (iw < 0 || iw >= in.w) continue;
                  const int64_t flat = (id * in.h + ih) * in.w + iw;
                  const float value = src[flat];
                  if (best_index < 0 || value > best || std::isnan(value)) {
                    if (!std::isnan(best) || best_index < 0) {
                      best = value;
                      best_index = flat;
                    }
                  }
                }
              }
            }
            const int64_t cell = plane * o.size() + (od * o.h + oh) * o.w + ow;
            result.data()[cell] = best;
            idx[cell] = best_index;
          }
    }
  });
  result.commit();
}

void max_pool3d_backward(const TensorView& grad_input, const TensorView& grad_out,
                         const TensorView& indices) {
  check_5d({&grad_input, &grad_out, &indices});
  if (grad_input.numel() == 0) return;
  const DenseFloatInput g(grad_out);
  DenseFloatOutput result(grad_input);
  std::fill(result.data(), result.data() + grad_input.numel(), 0.0f);
  const int64_t* idx = static_cast<const int64_t*>(indices.data);
  const Volume in = volume_of(grad_input), o = volume_of(grad_out);
  parallel_for(0, in.planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      float* dst = result.data() + plane * in.size();
      for (int64_t i = 0; i < o.size(); ++i) {
        const int64_t at = idx[plane * o.size() + i];
        if (at >= 0 && at < in.size()) dst[at] += g.data()[plane * o.size() + i];
      }
    }
  });
  result.commit();
}

void avg_pool3d_forward(const TensorView& out, const TensorView& input, const Pool3dParams& p) {
  check_5d({&out, &input});
  if (out.numel() == 0) return;
  const DenseFloatInput x(input);
  DenseFloatOutput result(out);
  const Volume in = volume_of(input), o = volume_of(out);
  parallel_for(0, in.planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* src = x.data() + plane * in.size();
      for (int64_t od = 0; od < o.d; ++od)
        for (int64_t oh = 0; oh < o.h; ++oh)
          for (int64_t ow = 0; ow < o.w; ++ow) {
            const Span s[3] = {avg_span(od, in.d, 0, p), avg_span(oh, in.h, 1, p),
                               avg_span(ow, in.w, 2, p)};
            float value = 0.0f;
            if (s[0].start < s[0].end && s[1].start < s[1].end && s[2].start < s[2].end) {
              float sum = 0.0f;
              for (int64_t id = s[0].start; id < s[0].end; ++id)
                for (int64_t ih = s[1].start; ih < s[1].end; ++ih)
                  for (int64_t iw = s[2].start; iw < s[2].end; ++iw)
                    sum += src[(id * in.h + ih) * in.w + iw];
              value = sum / avg_divisor(s, p);
            }
            result.data()[plane * o.size() + (od * o.h + oh) * o.w + ow] = value;
          }
    }
  });
  result.commit();
}

void avg_pool3d_backward(const TensorView& grad_input, const TensorView& grad_out,
                         const Pool3dParams& p) {
  check_5d({&grad_input, &grad_out});
  if (grad_input.numel() == 0) return;
  const DenseFloatInput g(grad_out);
  DenseFloatOutput result(grad_input);
  std::fill(result.data(), result.data() + grad_input.numel(), 0.0f);
  const Volume in = volume_of(grad_input), o = volume_of(grad_out);
  parallel_for(0, in.planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      float* dst = result.data() + plane * in.size();
      for (int64_t od = 0; od < o.d; ++od)
        for (int64_t oh = 0; oh < o.h; ++oh)
          for (int64_t ow = 0; ow < o.w; ++ow) {
            const Span s[3] = {avg_span(od, in.d, 0, p), avg_span(oh, in.h, 1, p),
                               avg_span(ow, in.w, 2, p)};
            if (!(s[0].start < s[0].end && s[1].start < s[1].end && s[2].start < s[2].end)) {
              continue;
            }
            const float share =
                g.data()[plane * o.size() + (od * o.h + oh) * o.w + ow] / avg_divisor(s, p);
            for (int64_t id = s[0].start; id < s[0].end; ++id)
              for (int64_t ih = s[1].start; ih < s[1].end; ++ih)
                for (int64_t iw = s[2].start; iw < s[2].end; ++iw)
                  dst[(id * in.h + ih) * in.w + iw] += share;
          }
    }
  });
  result.commit();
}

void adaptive_avg_pool3d_forward(const TensorView& out, const TensorView& input) {
  check_5d({&out, &input});
  if (out.numel() == 0) return;
  const DenseFloatInput x(input);
  DenseFloatOutput result(out);
  const Volume in = volume_of(input), o = volume_of(out);
  parallel_for(0, in.planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* src = x.data() + plane * in.size();
      for (int64_t od = 0; od < o.d; ++od) {
        const int64_t d0 = adaptive_start(od, in.d, o.d), d1 = adaptive_end(od, in.d, o.d);
        for (int64_t oh = 0; oh < o.h; ++oh) {
          const int64_t h0 = adaptive_start(oh, in.h, o.h), h1 = adaptive_end(oh, in.h, o.h);
          for (int64_t ow = 0; ow < o.w; ++ow) {
            const int64_t w0 = adaptive_start(ow, in.w, o.w), w1 = adaptive_end(ow, in.w, o.w);
            float sum = 0.0f;
            for (int64_t id = d0; id < d1; ++id)
              for (int64_t ih = h0; ih < h1; ++ih)
                for (int64_t iw = w0; iw < w1; ++iw) sum += src[(id * in.h + ih) * in.w + iw];
            result.data()[plane * o.size() + (od * o.h + oh) * o.w + ow] =
                sum / static_cast<float>((d1 - d0) * (h1 - h0) * (w1 - w0));
          }
        }
      }
    }
  });
  result.commit();
}

void adaptive_avg_pool3d_backward(const TensorView& grad_input, const TensorView& grad_out) {
  check_5d({&grad_input, &grad_out});
  if (grad_input.numel() == 0) return;
  const DenseFloatInput g(grad_out);
  DenseFloatOutput result(grad_input);
  std::fill(result.data(), result.data() + grad_input.numel(), 0.0f);
  const Volume in = volume_of(grad_input), o = volume_of(grad_out);
  parallel_for(0, in.planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      float* dst = result.data() + plane * in.size();
      for (int64_t od = 0; od < o.d; ++od) {
        const int64_t d0 = adaptive_start(od, in.d, o.d), d1 = adaptive_end(od, in.d, o.d);
        for (int64_t oh = 0; oh < o.h; ++oh) {
          const int64_t h0 = adaptive_start(oh, in.h, o.h), h1 = adaptive_end(oh, in.h, o.h);
          for (int64_t ow = 0; ow < o.w; ++ow) {
            const int64_t w0 = adaptive_start(ow, in.w, o.w), w1 = adaptive_end(ow, in.w, o.w);
            const float share = g.data()[plane * o.size() + (od * o.h + oh) * o.w + ow] /
                                static_cast<float>((d1 - d0) * (h1 - h0) * (w1 - w0));
            for (int64_t id = d0; id < d1; ++id)
              for (int64_t ih = h0; ih < h1; ++ih)
                for (int64_t iw = w0; iw < w1; ++iw) dst[(id * in.h + ih) * in.w + iw] += share;
          }
        }
      }
    }
  });
  result.commit();
}

}  // namespace openneuron::kernels
