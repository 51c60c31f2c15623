// complex32 convolutions on the host. PyTorch's conv*/conv_transpose* composites split a
// complex convolution into three real float16 ones and combine them with subtractions. The CPU
// runs that split itself at complex32 (it is the reference a user compares with), and native
// float16 convolutions, rounded once, differ from the CPU's float16 kernels by an ulp, which
// the cancellation in the combination magnifies far beyond complex32's tolerance. Complex
// dtypes stay on the host by design, so complex32 convolutions run there whole (through
// differentiable copies, so autograd flows through), counted as fallbacks. Every other dtype
// takes the composite unchanged.
#include <ATen/ops/conv1d_native.h>
#include <ATen/ops/conv2d_native.h>
#include <ATen/ops/conv3d_native.h>
#include <ATen/ops/conv_transpose1d_native.h>
#include <ATen/ops/conv_transpose2d_native.h>
#include <ATen/ops/conv_transpose3d_native.h>
#include <torch/library.h>

#include <optional>

#include "aten/core/op_tracking.h"

namespace openneuron::bridge {

namespace {

bool any_complex_half(const at::Tensor& input, const at::Tensor& weight) {
  return input.scalar_type() == at::kComplexHalf || weight.scalar_type() == at::kComplexHalf;
}

template <auto Composite, typename... Rest>
at::Tensor host_complex_half(const at::Tensor& input, const at::Tensor& weight,
                             const std::optional<at::Tensor>& bias, Rest... rest) {
  if (!any_complex_half(input, weight) || input.device().type() != c10::DeviceType::PrivateUse1) {
    return Composite(input, weight, bias, rest...);
  }
  record_fallback("aten::convolution (complex32)");
  std::optional<at::Tensor> host_bias;
  if (bias.has_value() && bias->defined()) host_bias = bias->cpu();
  return Composite(input.cpu(), weight.cpu(), host_bias, rest...).to(input.device());
}

using SymInts = c10::SymIntArrayRef;

void register_complex_half_convolutions(torch::Library& m) {
  m.impl(
      "conv1d",
      TORCH_FN(
          (host_complex_half<&at::native::conv1d_symint, SymInts, SymInts, SymInts, c10::SymInt>)));
  m.impl(
      "conv2d",
      TORCH_FN(
          (host_complex_half<&at::native::conv2d_symint, SymInts, SymInts, SymInts, c10::SymInt>)));
  m.impl(
      "conv3d",
      TORCH_FN(
          (host_complex_half<&at::native::conv3d_symint, SymInts, SymInts, SymInts, c10::SymInt>)));
  m.impl("conv1d.padding", TORCH_FN((host_complex_half<&at::native::conv1d_padding_symint, SymInts,
                                                       c10::string_view, SymInts, c10::SymInt>)));
  m.impl("conv2d.padding", TORCH_FN((host_complex_half<&at::native::conv2d_padding_symint, SymInts,
                                                       c10::string_view, SymInts, c10::SymInt>)));
  m.impl("conv3d.padding", TORCH_FN((host_complex_half<&at::native::conv3d_padding_symint, SymInts,
                                                       c10::string_view, SymInts, c10::SymInt>)));
  m.impl("conv_transpose1d",
         TORCH_FN((host_complex_half<&at::native::conv_transpose1d_symint, SymInts, SymInts,
                                     SymInts, c10::SymInt, SymInts>)));
  m.impl("conv_transpose2d.input",
         TORCH_FN((host_complex_half<&at::native::conv_transpose2d_symint, SymInts, SymInts,
                                     SymInts, c10::SymInt, SymInts>)));
  m.impl("conv_transpose3d.input",
         TORCH_FN((host_complex_half<&at::native::conv_transpose3d_symint, SymInts, SymInts,
                                     SymInts, c10::SymInt, SymInts>)));
}

}  // namespace

// Both keys: the autograd one for calls that record gradients, the backend one for calls below
// autograd (inference mode), so complex32 takes the host path either way.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { register_complex_half_convolutions(m); }
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) { register_complex_half_convolutions(m); }

}  // namespace openneuron::bridge
