// 3-D convolutions by depth slices: every operand is first made dense fp32, each (output depth,
// kernel depth) pair is one 2-D convolution on 4-D views into those buffers, and partial sums
// are added in fp32, so 16-bit results are rounded once.
#include "kernels/matmul/conv3d.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/core/dense_float.h"
#include "kernels/matmul/conv.h"

namespace openneuron::kernels {
namespace {

[[noreturn]] void fail(const std::string& message) {
  throw std::invalid_argument("openneuron kernels: conv3d: " + message);
}

void check_5d(std::initializer_list<const TensorView*> views) {
  for (const TensorView* view : views) {
    if (view != nullptr && view->ndim != 5) fail("views must be 5-D");
    if (view != nullptr && !is_floating(view->dtype)) fail("views must be floating");
  }
}

// The 4-D view [N, C, H, W] of depth slice `depth` of a dense fp32 5-D buffer.
TensorView depth_slice(float* data, const TensorView& shape_of, int64_t depth) {
  const TensorView dense = dense_view_like(data, DType::Float32, shape_of);
  TensorView slice;
  slice.data = data + depth * dense.strides[2];
  slice.dtype = DType::Float32;
  slice.ndim = 4;
  const int dims[4] = {0, 1, 3, 4};
  for (int d = 0; d < 4; ++d) {
    slice.sizes[d] = dense.sizes[dims[d]];
    slice.strides[d] = dense.strides[dims[d]];
  }
  return slice;
}

Conv2dParams plane_params(const Conv3dParams& p) {
  Conv2dParams plane;
  for (int d = 0; d < 2; ++d) {
    plane.stride[d] = p.stride[d + 1];
    plane.padding[d] = p.padding[d + 1];
    plane.dilation[d] = p.dilation[d + 1];
  }
  plane.groups = p.groups;
  return plane;
}

// The input depth that output depth `od` reads through kernel depth `kd`, or -1 if padding.
int64_t input_depth(int64_t od, int64_t kd, int64_t depth, const Conv3dParams& p) {
  const int64_t id = od * p.stride[0] - p.padding[0] + kd * p.dilation[0];
  return id >= 0 && id < depth ? id : -1;
}

// acc (double, dense [N, C, D, H, W] of `shape`) at depth slice `depth` += src (dense fp32
// [N, C, H, W]): partial sums over the kernel's depth are kept in double, rounded once.
void add_slice(std::vector<double>& acc, const TensorView& shape, int64_t depth,
               const TensorView& src) {
  const int64_t channels = shape.sizes[1], depths = shape.sizes[2];
  const int64_t plane = shape.sizes[3] * shape.sizes[4];
  const float* s = static_cast<const float*>(src.data);
  for (int64_t n = 0; n < shape.sizes[0]; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      double* d = acc.data() + ((n * channels + c) * depths + depth) * plane;
      const float* row = s + (n * channels + c) * plane;
      for (int64_t i = 0; i < plane; ++i) d[i] += row[i];
    }
  }
}

void store(float* dst, const std::vector<double>& acc) {
  for (size_t i = 0; i < acc.size(); ++i) dst[i] = static_cast<float>(acc[i]);
}

void check_shapes(const TensorView& out, const TensorView& input, const TensorView& weight,
                  const Conv3dParams& p) {
  if (out.sizes[0] != input.sizes[0] || out.sizes[1] != weight.sizes[0] ||
      input.sizes[1] != weight.sizes[1] * p.groups) {
    fail("inconsistent batch or channels");
  }
  for (int d = 0; d < 3; ++d) {
    const int64_t extent = p.dilation[d] * (weight.sizes[2 + d] - 1) + 1;
    if ((input.sizes[2 + d] + 2 * p.padding[d] - extent) / p.stride[d] + 1 != out.sizes[2 + d]) {
      fail("output size does not match the input, kernel and parameters");
    }
  }
}

// out (fp32 dense, shape `out_shape`) = conv3d(input, weight) without bias.
void forward_dense(float* out, const TensorView& out_shape, const float* input,
                   const TensorView& input_shape, const float* weight,
                   const TensorView& weight_shape, const Conv3dParams& p) {
  const int64_t out_depth = out_shape.sizes[2];
  const int64_t kernel_depth = weight_shape.sizes[2];
  std::vector<double> acc(static_cast<size_t>(out_shape.numel()), 0.0);
  TensorView one_slice = depth_slice(out, out_shape, 0);
  std::vector<float> partial(static_cast<size_t>(one_slice.numel()));
  const TensorView partial_view = dense_view_like(partial.data(), DType::Float32, one_slice);
  const Conv2dParams plane = plane_params(p);
  for (int64_t od = 0; od < out_depth; ++od) {
    for (int64_t kd = 0; kd < kernel_depth; ++kd) {
      const int64_t id = input_depth(od, kd, input_shape.sizes[2], p);
      if (id < 0) continue;
      conv2d_forward(partial_view, depth_slice(const_cast<float*>(input), input_shape, id),
                     depth_slice(const_cast<float*>(weight), weight_shape, kd), nullptr, plane);
      add_slice(acc, out_shape, od, partial_view);
    }
  }
  store(out, acc);
}

// grad_input (fp32 dense, overwritten) and/or grad_weight (likewise) of conv3d.
void backward_dense(float* grad_input, float* grad_weight, const float* grad_out,
                    const TensorView& out_shape, const float* input, const TensorView& input_shape,
                    const float* weight, const TensorView& weight_shape, const Conv3dParams& p) {
  const int64_t out_depth = out_shape.sizes[2];
  const int64_t kernel_depth = weight_shape.sizes[2];
  const Conv2dParams plane = plane_params(p);
  std::vector<float> gi_partial, gw_partial;
  std::vector<double> gi_acc, gw_acc;
  TensorView gi_view, gw_view;
  if (grad_input != nullptr) {
    gi_acc.assign(static_cast<size_t>(input_shape.numel()), 0.0);
    const TensorView shape = depth_slice(grad_input, input_shape, 0);
    gi_partial.resize(static_cast<size_t>(shape.numel()));
    gi_view = dense_view_like(gi_partial.data(), DType::Float32, shape);
  }
  if (grad_weight != nullptr) {
    gw_acc.assign(static_cast<size_t>(weight_shape.numel()), 0.0);
    const TensorView shape = depth_slice(grad_weight, weight_shape, 0);
    gw_partial.resize(static_cast<size_t>(shape.numel()));
    gw_view = dense_view_like(gw_partial.data(), DType::Float32, shape);
  }
  for (int64_t od = 0; od < out_depth; ++od) {
    const TensorView go_slice = depth_slice(const_cast<float*>(grad_out), out_shape, od);
    for (int64_t kd = 0; kd < kernel_depth; ++kd) {
      const int64_t id = input_depth(od, kd, input_shape.sizes[2], p);
      if (id < 0) continue;
      const TensorView in_slice = depth_slice(const_cast<float*>(input), input_shape, id);
      const TensorView w_slice = depth_slice(const_cast<float*>(weight), weight_shape, kd);
      conv2d_backward(grad_input != nullptr ? &gi_view : nullptr,
                      grad_weight != nullptr ? &gw_view : nullptr, nullptr, go_slice, in_slice,
                      w_slice, plane);
      if (grad_input != nullptr) add_slice(gi_acc, input_shape, id, gi_view);
      if (grad_weight != nullptr) add_slice(gw_acc, weight_shape, kd, gw_view);
    }
  }
  if (grad_input != nullptr) store(grad_input, gi_acc);
  if (grad_weight != nullptr) store(grad_weight, gw_acc);
}

// grad_bias[o] = sum of grad_out over everything but channel o, in double, rounded once.
void bias_gradient(const TensorView& grad_bias, const float* grad_out, const TensorView& shape) {
  const int64_t channels = shape.sizes[1];
  const int64_t plane = shape.sizes[2] * shape.sizes[3] * shape.sizes[4];
  DenseFloatOutput gb(grad_bias);
  for (int64_t c = 0; c < channels; ++c) {
    double total = 0.0;
    for (int64_t n = 0; n < shape.sizes[0]; ++n) {
      const float* row = grad_out + (n * channels + c) * plane;
      for (int64_t i = 0; i < plane; ++i) total += row[i];
    }
    gb.data()[c] = static_cast<float>(total);
  }
  gb.commit();
}

void add_bias(float* out, const TensorView& shape, const TensorView& bias) {
  const DenseFloatInput b(bias);
  const int64_t channels = shape.sizes[1];
  const int64_t plane = shape.sizes[2] * shape.sizes[3] * shape.sizes[4];
  for (int64_t row = 0; row < shape.sizes[0] * channels; ++row) {
    const float value = b.data()[row % channels];
    for (int64_t i = 0; i < plane; ++i) out[row * plane + i] += value;
  }
}

}  // namespace

void conv3d_forward(const TensorView& out, const TensorView& input, const TensorView& weight,
                    const TensorView* bias, const Conv3dParams& params) {
  check_5d({&out, &input, &weight});
  check_shapes(out, input, weight, params);
  if (out.numel() == 0) return;
  DenseFloatOutput result(out);
  if (input.numel() == 0 || weight.numel() == 0) {
    std::fill(result.data(), result.data() + out.numel(), 0.0f);
  } else {
    const DenseFloatInput in(input);
    const DenseFloatInput w(weight);
    forward_dense(result.data(), out, in.data(), input, w.data(), weight, params);
  }
  if (bias != nullptr) add_bias(result.data(), out, *bias);
  result.commit();
}

void conv3d_backward(const TensorView* grad_input, const TensorView* grad_weight,
                     const TensorView* grad_bias, const TensorView& grad_out,
                     const TensorView& input, const TensorView& weight,
                     const Conv3dParams& params) {
  check_5d({grad_input, grad_weight, &grad_out, &input, &weight});
  check_shapes(grad_out, input, weight, params);
  const DenseFloatInput go(grad_out);
  const bool want_input = grad_input != nullptr && grad_input->numel() > 0;
  const bool want_weight = grad_weight != nullptr && grad_weight->numel() > 0;
  if (want_input || want_weight) {
    const DenseFloatInput in(input);
    const DenseFloatInput w(weight);
    std::vector<float> gi, gw;
    if (want_input) gi.resize(static_cast<size_t>(input.numel()));
    if (want_weight) gw.resize(static_cast<size_t>(weight.numel()));
    if (grad_out.numel() > 0) {
      backward_dense(want_input ? gi.data() : nullptr, want_weight ? gw.data() : nullptr, go.data(),
                     grad_out, in.data(), input, w.data(), weight, params);
    }
    if (want_input) copy(*grad_input, dense_view_like(gi.data(), DType::Float32, input));
    if (want_weight) copy(*grad_weight, dense_view_like(gw.data(), DType::Float32, weight));
  }
  if (grad_bias != nullptr && grad_bias->numel() > 0)
    bias_gradient(*grad_bias, go.data(), grad_out);
}

void conv_transpose3d_forward(const TensorView& out, const TensorView& input,
                              const TensorView& weight, const TensorView* bias,
                              const Conv3dParams& params) {
  check_5d({&out, &input, &weight});
  // `out` plays the convolution's input, `input` its output gradient.
  if (out.sizes[0] != input.sizes[0] || input.sizes[1] != weight.sizes[0] ||
      out.sizes[1] != weight.sizes[1] * params.groups) {
    fail("conv_transpose3d: inconsistent batch or channels");
  }
  for (int d = 0; d < 3; ++d) {
    const int64_t base = (input.sizes[2 + d] - 1) * params.stride[d] - 2 * params.padding[d] +
                         params.dilation[d] * (weight.sizes[2 + d] - 1) + 1;
    const int64_t output_padding = out.sizes[2 + d] - base;
    if (output_padding < 0 || output_padding >= params.stride[d]) {
      fail("conv_transpose3d: output size does not match the input, kernel and parameters");
    }
  }
  if (out.numel() == 0) return;
  DenseFloatOutput result(out);
  if (input.numel() == 0 || weight.numel() == 0) {
    std::fill(result.data(), result.data() + out.numel(), 0.0f);
  } else {
    const DenseFloatInput in(input);
    const DenseFloatInput w(weight);
    // The convolution's input is only a shape here (its data is never read for this gradient).
    backward_dense(result.data(), nullptr, in.data(), input, result.data(), out, w.data(), weight,
                   params);
  }
  if (bias != nullptr) add_bias(result.data(), out, *bias);
  result.commit();
}

void conv_transpose3d_backward(const TensorView* grad_input, const TensorView* grad_weight,
                               const TensorView* grad_bias, const TensorView& grad_out,
                               const TensorView& input, const TensorView& weight,
                               const Conv3dParams& params) {
  check_5d({grad_input, grad_weight, &grad_out, &input, &weight});
  const DenseFloatInput go(grad_out);
  if (grad_input != nullptr && grad_input->numel() > 0) {
    // The transposed op's input gradient is the convolution of grad_out.
    conv3d_forward(*grad_input, grad_out, weight, nullptr, params);
  }
  if (grad_weight != nullptr && grad_weight->numel() > 0) {
    // A convolution's weight gradient with grad_out as its input and `input` as its output
    // gradient.
    std::vector<float> gw(static_cast<size_t>(weight.numel()), 0.0f);
    if (grad_out.numel() > 0 && input.numel() > 0) {
      const DenseFloatInput in(input);
      // The weight is only a shape here (its data is never used for this gradient).
      backward_dense(nullptr, gw.data(), in.data(), input, go.data(), grad_out, gw.data(), weight,
                     params);
    }
    copy(*grad_weight, dense_view_like(gw.data(), DType::Float32, weight));
  }
  if (grad_bias != nullptr && grad_bias->numel() > 0)
    bias_gradient(*grad_bias, go.data(), grad_out);
}

}  // namespace openneuron::kernels
