// complex32 convolutions computed at complex64 and rounded once. PyTorch's conv*/conv_transpose*
// composites split a complex convolution into three real ones and combine them: at complex32 that
// would round each real partial to float16 before the subtractions that combine them, losing
// the digits the cancellation keeps. Widening the operands first (differentiable casts, so
// autograd flows through) makes the partials float32 and the result rounded once, as CUDA's
// reference at complex64 is. Every other dtype takes the composite unchanged.
#include <ATen/ops/conv1d_native.h>
#include <ATen/ops/conv2d_native.h>
#include <ATen/ops/conv3d_native.h>
#include <ATen/ops/conv_transpose1d_native.h>
#include <ATen/ops/conv_transpose2d_native.h>
#include <ATen/ops/conv_transpose3d_native.h>
#include <torch/library.h>

#include <optional>

namespace openneuron::bridge {

namespace {

bool any_complex_half(const at::Tensor& input, const at::Tensor& weight) {
  return input.scalar_type() == at::kComplexHalf || weight.scalar_type() == at::kComplexHalf;
}

template <auto Composite, typename... Rest>
at::Tensor widened_complex_half(const at::Tensor& input, const at::Tensor& weight,
                                const std::optional<at::Tensor>& bias, Rest... rest) {
  if (!any_complex_half(input, weight)) return Composite(input, weight, bias, rest...);
  const auto widen = [](const at::Tensor& t) {
    return t.scalar_type() == at::kComplexHalf ? t.to(at::kComplexFloat) : t;
  };
  std::optional<at::Tensor> wide_bias;
  if (bias.has_value() && bias->defined()) wide_bias = widen(*bias);
  return Composite(widen(input), widen(weight), wide_bias, rest...).to(at::kComplexHalf);
}

using SymInts = c10::SymIntArrayRef;

void register_complex_half_convolutions(torch::Library& m) {
  m.impl("conv1d", TORCH_FN((widened_complex_half<&at::native::conv1d_symint, SymInts, SymInts,
                                                  SymInts, c10::SymInt>)));
  m.impl("conv2d", TORCH_FN((widened_complex_half<&at::native::conv2d_symint, SymInts, SymInts,
                                                  SymInts, c10::SymInt>)));
  m.impl("conv3d", TORCH_FN((widened_complex_half<&at::native::conv3d_symint, SymInts, SymInts,
                                                  SymInts, c10::SymInt>)));
  m.impl("conv1d.padding",
         TORCH_FN((widened_complex_half<&at::native::conv1d_padding_symint, SymInts,
                                        c10::string_view, SymInts, c10::SymInt>)));
  m.impl("conv2d.padding",
         TORCH_FN((widened_complex_half<&at::native::conv2d_padding_symint, SymInts,
                                        c10::string_view, SymInts, c10::SymInt>)));
  m.impl("conv3d.padding",
         TORCH_FN((widened_complex_half<&at::native::conv3d_padding_symint, SymInts,
                                        c10::string_view, SymInts, c10::SymInt>)));
  m.impl("conv_transpose1d",
         TORCH_FN((widened_complex_half<&at::native::conv_transpose1d_symint, SymInts, SymInts,
                                        SymInts, c10::SymInt, SymInts>)));
  m.impl("conv_transpose2d.input",
         TORCH_FN((widened_complex_half<&at::native::conv_transpose2d_symint, SymInts, SymInts,
                                        SymInts, c10::SymInt, SymInts>)));
  m.impl("conv_transpose3d.input",
         TORCH_FN((widened_complex_half<&at::native::conv_transpose3d_symint, SymInts, SymInts,
                                        SymInts, c10::SymInt, SymInts>)));
}

}  // namespace

// Both keys: the autograd one for calls that record gradients, the backend one for calls below
// autograd (inference mode), so complex32 takes the widened path either way.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { register_complex_half_convolutions(m); }
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) { register_complex_half_convolutions(m); }

}  // namespace openneuron::bridge
