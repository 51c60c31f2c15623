// Convolution entry points: oneDNN's convolution primitives (dnnl_conv.cpp) when they take the
// problem, else im2col: each sample's receptive fields are unrolled into a [C/g*KH*KW, OH*OW]
// column matrix so that every group's convolution is one sgemm.
#include "kernels/matmul/conv.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <vector>

#include "kernels/core/dense_float.h"
#include "kernels/matmul/dnnl_conv.h"
#include "kernels/matmul/nn_blas.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

struct ConvShape {
  int64_t batch, in_channels, height, width;
  int64_t out_channels, group_in_channels, kernel_h, kernel_w;
  int64_t out_h, out_w, groups;
  int64_t group_out_channels() const { return out_channels / groups; }
  int64_t col_rows() const { return group_in_channels * kernel_h * kernel_w; }
  int64_t out_plane() const { return out_h * out_w; }
  int64_t in_plane() const { return height * width; }
};

ConvShape conv_shape(const TensorView& input, const TensorView& weight, const TensorView& out,
                     const Conv2dParams& p) {
  if (input.ndim != 4 || weight.ndim != 4 || out.ndim != 4) {
    throw std::invalid_argument("openneuron kernels: conv2d: views must be 4-D");
  }
  ConvShape s{input.sizes[0],  input.sizes[1],  input.sizes[2],  input.sizes[3],
              weight.sizes[0], weight.sizes[1], weight.sizes[2], weight.sizes[3],
              out.sizes[2],    out.sizes[3],    p.groups};
  const bool consistent =
      p.groups >= 1 && s.in_channels == s.group_in_channels * p.groups &&
      s.out_channels % p.groups == 0 && out.sizes[0] == s.batch && out.sizes[1] == s.out_channels &&
      s.out_h ==
          (s.height + 2 * p.padding[0] - p.dilation[0] * (s.kernel_h - 1) - 1) / p.stride[0] + 1 &&
      s.out_w ==
          (s.width + 2 * p.padding[1] - p.dilation[1] * (s.kernel_w - 1) - 1) / p.stride[1] + 1;
  if (!consistent) throw std::invalid_argument("openneuron kernels: conv2d: inconsistent shapes");
  return s;
}

// First and one-past-last output column whose input column ow*stride - pad + offset lies
// inside [0, width).
void valid_range(int64_t out_size, int64_t in_size, int64_t stride, int64_t offset, int64_t* first,
                 int64_t* last) {
  // offset = k*dilation - pad; input index = o*stride + offset.
  int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t hi = in_size - offset <= 0 ? 0 : (in_size - offset + stride - 1) / stride;
  *first = std::min(lo, out_size);
  *last = std::max(*first, std::min(hi, out_size));
}

bool is_pointwise(const ConvShape& s, const Conv2dParams& p) {
  return s.kernel_h == 1 && s.kernel_w == 1 && p.stride[0] == 1 && p.stride[1] == 1 &&
         p.padding[0] == 0 && p.padding[1] == 0;
}

// col[K, OH*OW] from one group's channels image[Cg, H, W]; rows split across threads.
void im2col(float* col, const float* image, const ConvShape& s, const Conv2dParams& p) {
  const int64_t rows = s.col_rows();
  const int64_t plane = s.out_plane();
  parallel_for(0, rows, 8, [&](int64_t row_begin, int64_t row_end) {
    for (int64_t row = row_begin; row < row_end; ++row) {
      const int64_t kw = row % s.kernel_w;
      const int64_t kh = (row / s.kernel_w) % s.kernel_h;
      const int64_t c = row / (s.kernel_w * s.kernel_h);
      const float* channel = image + c * s.in_plane();
      float* dst = col + row * plane;
      const int64_t off_h = kh * p.dilation[0] - p.padding[0];
      const int64_t off_w = kw * p.dilation[1] - p.padding[1];
      int64_t w_first, w_last;
      valid_range(s.out_w, s.width, p.stride[1], off_w, &w_first, &w_last);
      for (int64_t oh = 0; oh < s.out_h; ++oh) {
        float* dst_row = dst + oh * s.out_w;
        const int64_t ih = oh * p.stride[0] + off_h;
        if (ih < 0 || ih >= s.height) {
          std::fill(dst_row, dst_row + s.out_w, 0.0f);
          continue;
        }
        const float* src_row = channel + ih * s.width + off_w;
        std::fill(dst_row, dst_row + w_first, 0.0f);
        if (p.stride[1] == 1) {
          for (int64_t ow = w_first; ow < w_last; ++ow) dst_row[ow] = src_row[ow];
        } else {
          const int64_t st = p.stride[1];
          for (int64_t ow = w_first; ow < w_last; ++ow) dst_row[ow] = src_row[ow * st];
        }
        std::fill(dst_row + w_last, dst_row + s.out_w, 0.0f);
      }
    }
  });
}

// image[Cg, H, W] += fold(col[K, OH*OW]); channels split across threads (no write races).
void col2im_add(float* image, const float* col, const ConvShape& s, const Conv2dParams& p) {
  const int64_t plane = s.out_plane();
  const int64_t kernel_area = s.kernel_h * s.kernel_w;
  parallel_for(0, s.group_in_channels, 1, [&](int64_t c_begin, int64_t c_end) {
    for (int64_t c = c_begin; c < c_end; ++c) {
      float* channel = image + c * s.in_plane();
      for (int64_t k = 0; k < kernel_area; ++k) {
        const int64_t kh = k / s.kernel_w;
        const int64_t kw = k % s.kernel_w;
        const float* src = col + (c * kernel_area + k) * plane;
        const int64_t off_h = kh * p.dilation[0] - p.padding[0];
        const int64_t off_w = kw * p.dilation[1] - p.padding[1];
        int64_t w_first, w_last;
        valid_range(s.out_w, s.width, p.stride[1], off_w, &w_first, &w_last);
        for (int64_t oh = 0; oh < s.out_h; ++oh) {
          const int64_t ih = oh * p.stride[0] + off_h;
          if (ih < 0 || ih >= s.height) continue;
          float* dst_row = channel + ih * s.width + off_w;
          const float* src_row = src + oh * s.out_w;
          const int64_t st = p.stride[1];
          for (int64_t ow = w_first; ow < w_last; ++ow) dst_row[ow * st] += src_row[ow];
        }
      }
    }
  });
}

void check_dtypes(std::initializer_list<const TensorView*> views) {
  for (const TensorView* v : views) {
    if (v != nullptr && v->dtype != DType::Float32 && v->dtype != DType::BFloat16 &&
        v->dtype != DType::Float16) {
      throw std::invalid_argument("openneuron kernels: conv2d: float32/bfloat16/float16 only");
    }
  }
}

}  // namespace

void conv2d_forward(const TensorView& out, const TensorView& input, const TensorView& weight,
                    const TensorView* bias, const Conv2dParams& params) {
  check_dtypes({&out, &input, &weight, bias});
  const ConvShape s = conv_shape(input, weight, out, params);
  if (out.numel() == 0) return;
  if (dnnl_conv2d_forward(out, input, weight, bias, params)) return;
  DenseFloatOutput result(out);
  float* out_data = result.data();
  const int64_t plane = s.out_plane();
  const int64_t og = s.group_out_channels();
  const int64_t k = s.col_rows();
  if (input.numel() == 0 || k == 0) {
    std::fill(out_data, out_data + out.numel(), 0.0f);
  } else {
    const DenseFloatInput in(input);
    const DenseFloatInput w(weight);
    const bool pointwise = is_pointwise(s, params);
    std::vector<float> col(pointwise ? 0 : static_cast<size_t>(k * plane));
    for (int64_t n = 0; n < s.batch; ++n) {
      for (int64_t g = 0; g < s.groups; ++g) {
        const float* image =
            in.data() + (n * s.in_channels + g * s.group_in_channels) * s.in_plane();
        const float* columns = image;
        if (!pointwise) {
          im2col(col.data(), image, s, params);
          columns = col.data();
        }
        nn_sgemm(false, false, og, plane, k, 1.0f, w.data() + g * og * k, k, columns, plane, 0.0f,
                 out_data + (n * s.out_channels + g * og) * plane, plane);
      }
    }
  }
  if (bias != nullptr) {
    const DenseFloatInput b(*bias);
    parallel_for(0, s.batch * s.out_channels, 16, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const float value = b.data()[row % s.out_channels];
        float* dst = out_data + row * plane;
        for (int64_t i = 0; i < plane; ++i) dst[i] += value;
      }
    });
  }
  result.commit();
}

void conv2d_backward(const TensorView* grad_input, const TensorView* grad_weight,
                     const TensorView* grad_bias, const TensorView& grad_out,
                     const TensorView& input, const TensorView& weight,
                     const Conv2dParams& params) {
  check_dtypes({grad_input, grad_weight, grad_bias, &grad_out, &input, &weight});
  const ConvShape s = conv_shape(input, weight, grad_out, params);
  if (dnnl_conv2d_backward(grad_input, grad_weight, grad_bias, grad_out, input, weight, params)) {
    return;
  }
  const int64_t plane = s.out_plane();
  const int64_t og = s.group_out_channels();
  const int64_t k = s.col_rows();
  const DenseFloatInput go(grad_out);

  if (grad_bias != nullptr && grad_bias->numel() > 0) {
    // Sums in double: a bias gradient adds N*OH*OW terms.
    std::vector<double> sums(static_cast<size_t>(s.out_channels), 0.0);
    parallel_for(0, s.out_channels, 1, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        double total = 0.0;
        for (int64_t n = 0; n < s.batch; ++n) {
          const float* src = go.data() + (n * s.out_channels + o) * plane;
          float partial = 0.0f;
          for (int64_t i = 0; i < plane; ++i) partial += src[i];
          total += partial;
        }
        sums[static_cast<size_t>(o)] = total;
      }
    });
    DenseFloatOutput gb(*grad_bias);
    for (int64_t o = 0; o < s.out_channels; ++o) gb.data()[o] = static_cast<float>(sums[o]);
    gb.commit();
  }
  const bool want_input = grad_input != nullptr && grad_input->numel() > 0;
  const bool want_weight = grad_weight != nullptr && grad_weight->numel() > 0;
  if (!want_input && !want_weight) return;

  const DenseFloatInput w(weight);
  std::unique_ptr<DenseFloatInput> in;
  if (want_weight) in = std::make_unique<DenseFloatInput>(input);
  std::unique_ptr<DenseFloatOutput> gi, gw;
  if (want_input) {
    gi = std::make_unique<DenseFloatOutput>(*grad_input);
    std::fill(gi->data(), gi->data() + grad_input->numel(), 0.0f);
  }
  if (want_weight) {
    gw = std::make_unique<DenseFloatOutput>(*grad_weight);
    std::fill(gw->data(), gw->data() + grad_weight->numel(), 0.0f);
  }
  const bool pointwise = is_pointwise(s, params);
  std::vector<float> col(static_cast<size_t>(k * plane));
  if (plane > 0 && k > 0) {
    for (int64_t n = 0; n < s.batch; ++n) {
      for (int64_t g = 0; g < s.groups; ++g) {
        const float* go_group = go.data() + (n * s.out_channels + g * og) * plane;
        const int64_t image_offset = (n * s.in_channels + g * s.group_in_channels) * s.in_plane();
        if (want_weight) {
          // grad_weight[og, K] += grad_out[og, P] @ col[K, P]^T
          const float* columns = in->data() + image_offset;
          if (!pointwise) {
            im2col(col.data(), columns, s, params);
            columns = col.data();
          }
          nn_sgemm(false, true, og, k, plane, 1.0f, go_group, plane, columns, plane, 1.0f,
                   gw->data() + g * og * k, k);
        }
        if (want_input) {
          // col[K, P] = weight[og, K]^T @ grad_out[og, P], folded back onto the image.
          float* image = gi->data() + image_offset;
          if (pointwise) {
            nn_sgemm(true, false, k, plane, og, 1.0f, w.data() + g * og * k, k, go_group, plane,
                     1.0f, image, plane);
          } else {
            nn_sgemm(true, false, k, plane, og, 1.0f, w.data() + g * og * k, k, go_group, plane,
                     0.0f, col.data(), plane);
            col2im_add(image, col.data(), s, params);
          }
        }
      }
    }
  }
  if (gi) gi->commit();
  if (gw) gw->commit();
}

}  // namespace openneuron::kernels
