// Transposed convolution by the convolution kernels (oneDNN, else im2col + sgemm): the
// transposed problem is the convolution whose input is this op's output.
#include "kernels/matmul/conv_transpose.h"

#include <stdexcept>
#include <vector>

#include "kernels/core/dense_float.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

void check_4d(std::initializer_list<const TensorView*> views) {
  for (const TensorView* view : views) {
    if (view != nullptr && view->ndim != 4) {
      throw std::invalid_argument("openneuron kernels: conv_transpose2d: views must be 4-D");
    }
  }
}

// The output padding a transposed output's size implies must lie in [0, stride): only then is
// the transposed problem exactly a convolution's input gradient.
void check_output_size(const TensorView& out, const TensorView& input, const TensorView& weight,
                       const Conv2dParams& p) {
  for (int d = 0; d < 2; ++d) {
    const int64_t base = (input.sizes[2 + d] - 1) * p.stride[d] - 2 * p.padding[d] +
                         p.dilation[d] * (weight.sizes[2 + d] - 1) + 1;
    const int64_t output_padding = out.sizes[2 + d] - base;
    if (output_padding < 0 || output_padding >= p.stride[d]) {
      throw std::invalid_argument(
          "openneuron kernels: conv_transpose2d: output size does not match the input, kernel "
          "and parameters (output padding must lie in [0, stride))");
    }
  }
  if (out.sizes[0] != input.sizes[0] || input.sizes[1] != weight.sizes[0] ||
      out.sizes[1] != weight.sizes[1] * p.groups) {
    throw std::invalid_argument("openneuron kernels: conv_transpose2d: inconsistent channels");
  }
}

// sums[c] = sum over n, h, w of values[n, c, h, w] (dense fp32), in double per channel.
void channel_sums(const float* values, int64_t batch, int64_t channels, int64_t plane,
                  double* sums) {
  parallel_for(0, channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      double total = 0.0;
      for (int64_t n = 0; n < batch; ++n) {
        const float* row = values + (n * channels + c) * plane;
        float partial = 0.0f;
        for (int64_t i = 0; i < plane; ++i) partial += row[i];
        total += partial;
      }
      sums[c] = total;
    }
  });
}

}  // namespace

void conv_transpose2d_forward(const TensorView& out, const TensorView& input,
                              const TensorView& weight, const TensorView* bias,
                              const Conv2dParams& params) {
  check_4d({&out, &input, &weight, nullptr});
  check_output_size(out, input, weight, params);
  if (out.numel() == 0) return;
  // In fp32 throughout (bias included), so a 16-bit out is rounded once.
  DenseFloatOutput result(out);
  const TensorView dense = dense_view_like(result.data(), DType::Float32, out);
  if (input.numel() == 0) {
    std::fill(result.data(), result.data() + out.numel(), 0.0f);
  } else {
    // out is the input gradient of the convolution input -> `input` through `weight`.
    conv2d_backward(&dense, nullptr, nullptr, input, dense, weight, params);
  }
  if (bias != nullptr) {
    const DenseFloatInput b(*bias);
    const int64_t channels = out.sizes[1], plane = out.sizes[2] * out.sizes[3];
    float* data = result.data();
    parallel_for(0, out.sizes[0] * channels, 16, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const float value = b.data()[row % channels];
        float* dst = data + row * plane;
        for (int64_t i = 0; i < plane; ++i) dst[i] += value;
      }
    });
  }
  result.commit();
}

void conv_transpose2d_backward(const TensorView* grad_input, const TensorView* grad_weight,
                               const TensorView* grad_bias, const TensorView& grad_out,
                               const TensorView& input, const TensorView& weight,
                               const Conv2dParams& params) {
  check_4d({grad_input, grad_weight, &grad_out, &input, &weight});
  check_output_size(grad_out, input, weight, params);
  if (grad_input != nullptr && grad_input->numel() > 0) {
    // The transposed op's input gradient is the convolution of grad_out.
    conv2d_forward(*grad_input, grad_out, weight, nullptr, params);
  }
  if (grad_weight != nullptr && grad_weight->numel() > 0) {
    if (grad_out.numel() == 0 || input.numel() == 0) {
      DenseFloatOutput zeros(*grad_weight);
      std::fill(zeros.data(), zeros.data() + grad_weight->numel(), 0.0f);
      zeros.commit();
    } else {
      // The convolution's weight gradient with grad_out as its input and `input` as its output
      // gradient.
      conv2d_backward(nullptr, grad_weight, nullptr, input, grad_out, weight, params);
    }
  }
  if (grad_bias != nullptr && grad_bias->numel() > 0) {
    const DenseFloatInput go(grad_out);
    const int64_t channels = grad_out.sizes[1];
    std::vector<double> sums(static_cast<size_t>(channels), 0.0);
    channel_sums(go.data(), grad_out.sizes[0], channels, grad_out.sizes[2] * grad_out.sizes[3],
                 sums.data());
    DenseFloatOutput gb(*grad_bias);
    for (int64_t c = 0; c < channels; ++c) gb.data()[c] = static_cast<float>(sums[c]);
    gb.commit();
  }
}

}  // namespace openneuron::kernels
