// int64 convolution, 1-D and 2-D, plain and transposed, as the CPU computes it (exactly, with
// two's-complement wraparound): windows gathered into columns and multiplied by the weights
// with the native integer matmul, or for the transposed form multiplied first and scattered
// back with the windows' adjoint.
#include <ATen/ops/matmul.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/op_tracking.h"
#include "aten/ops/nn/ops_nn.h"
#include "aten/ops/nn/sliding_windows.h"

namespace openneuron::bridge {
namespace {

// The window in 2-D terms: a 1-D convolution runs over a height of 1.
Window conv_window(const at::Tensor& weight4d, bool one_d, at::IntArrayRef stride,
                   at::IntArrayRef padding, at::IntArrayRef dilation) {
  Window w;
  for (int i = 0; i < 2; ++i) {
    const bool unit = one_d && i == 0;
    const int d = one_d ? 0 : i;
    w.kernel[i] = weight4d.size(2 + i);
    w.stride[i] = unit ? 1 : stride[d];
    w.padding[i] = unit ? 0 : padding[d];
    w.dilation[i] = unit ? 1 : dilation[d];
  }
  return w;
}

}  // namespace

bool integer_convolution_supported(const at::Tensor& input, const at::Tensor& weight,
                                   const at::Tensor* bias, int64_t groups) {
  if (input.scalar_type() != at::kLong || weight.scalar_type() != at::kLong ||
      (bias != nullptr && bias->scalar_type() != at::kLong) ||
      (input.dim() != 3 && input.dim() != 4) || weight.dim() != input.dim()) {
    return false;
  }
  return groups > 0;
}

at::Tensor integer_convolution(const at::Tensor& input, const at::Tensor& weight,
                               const at::Tensor* bias, bool transposed, at::IntArrayRef stride,
                               at::IntArrayRef padding, at::IntArrayRef dilation,
                               at::IntArrayRef output_padding, int64_t groups) {
  OPENNEURON_NATIVE_OP("aten::convolution_overrideable");
  const c10::DeviceGuard guard(input.device());
  const bool one_d = input.dim() == 3;
  const at::Tensor x = one_d ? input.unsqueeze(2) : input;
  const at::Tensor k = one_d ? weight.unsqueeze(2) : weight;
  const Window w = conv_window(k, one_d, stride, padding, dilation);
  const int64_t n = x.size(0), taps = k.size(2) * k.size(3);
  at::Tensor out;
  if (!transposed) {
    const int64_t out_channels = k.size(0), group_channels = k.size(1);
    const at::Tensor columns = gather_windows(x, w);  // [N, C * taps, L]
    const at::Tensor grouped = columns.view({n, groups, group_channels * taps, columns.size(2)});
    const at::Tensor kernels = k.reshape({groups, out_channels / groups, group_channels * taps});
    out = at::matmul(kernels, grouped)
              .reshape({n, out_channels, window_positions(x.size(2), w, 0),
                        window_positions(x.size(3), w, 1)});
  } else {
    const int64_t in_channels = x.size(1), group_out = k.size(1);
    const int64_t height = x.size(2), width = x.size(3);
    const at::Tensor grouped = x.reshape({n, groups, in_channels / groups, height * width});
    const at::Tensor kernels =
        k.reshape({groups, in_channels / groups, group_out * taps}).transpose(1, 2);
    const at::Tensor columns =
        at::matmul(kernels, grouped).reshape({n, groups * group_out * taps, height * width});
    int64_t extent[2];
    for (int i = 0; i < 2; ++i) {
      const int64_t size = i == 0 ? height : width;
      const int64_t extra = one_d ? (i == 0 ? 0 : output_padding[0]) : output_padding[i];
      extent[i] = (size - 1) * w.stride[i] - 2 * w.padding[i] + w.dilation[i] * (w.kernel[i] - 1) +
                  1 + extra;
    }
    out = scatter_windows(columns, extent[0], extent[1], w, height, width);
  }
  if (bias != nullptr) out.add_(bias->view({1, -1, 1, 1}));
  return one_d ? out.squeeze(2) : out;
}

}  // namespace openneuron::bridge
