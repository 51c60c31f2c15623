// Interpolation on the device (upsample_*: nearest and nearest-exact 1-D/2-D/3-D, linear,
// bilinear, trilinear, bicubic), forward and backward; F.interpolate's .vec overloads reach
// these through PyTorch's own composite kernels.
#include "aten/ops/nn/ops_interpolate.h"

#include <ATen/native/Resize.h>
#include <ATen/native/UpSample.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>

#include <string>
#include <vector>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/nn/nn_helpers.h"
#include "kernels/nn/interpolate.h"

namespace openneuron::bridge {

namespace {

using kernels::InterpolateMode;

kernels::InterpolateParams params_of(InterpolateMode mode, bool align_corners,
                                     std::initializer_list<Scale> scales) {
  kernels::InterpolateParams p;
  p.mode = mode;
  p.align_corners = align_corners;
  int axis = 0;
  for (const Scale& s : scales) p.scales[axis++] = s.value_or(0.0);
  return p;
}

// The full output shape, checked with the messages of PyTorch's meta kernels.
std::vector<int64_t> output_shape(int spatial, at::IntArrayRef input_size,
                                  at::IntArrayRef output_size) {
  switch (spatial) {
    case 1: {
      const auto s = at::native::upsample_1d_common_check(input_size, output_size);
      return {s.begin(), s.end()};
    }
    case 2: {
      const auto s = at::native::upsample_2d_common_check(input_size, output_size);
      return {s.begin(), s.end()};
    }
    default: {
      const auto s = at::native::upsample_3d_common_check(input_size, output_size);
      return {s.begin(), s.end()};
    }
  }
}

std::vector<int64_t> checked_forward_shape(const at::Tensor& self, int spatial,
                                           at::IntArrayRef output_size) {
  std::vector<int64_t> shape = output_shape(spatial, self.sizes(), output_size);
  // An empty batch is allowed, empty channels or spatial dims are not.
  int64_t non_batch = 1;
  for (int64_t d = 1; d < self.dim(); ++d) non_batch *= self.size(d);
  TORCH_CHECK(self.numel() != 0 || non_batch != 0, "Non-empty ", spatial + 2,
              "D data tensor expected but got a tensor with sizes ", self.sizes());
  return shape;
}

std::vector<int64_t> checked_backward_shape(const at::Tensor& grad_output, int spatial,
                                            at::IntArrayRef output_size,
                                            at::IntArrayRef input_size) {
  const std::vector<int64_t> full = output_shape(spatial, input_size, output_size);
  TORCH_CHECK(grad_output.dim() == spatial + 2, "Expected grad_output to be a tensor of dimension ",
              spatial + 2, " but got: dimension ", grad_output.dim());
  for (int64_t d = 0; d < spatial + 2; ++d) {
    TORCH_CHECK(grad_output.size(d) == full[d],
                "Expected grad_output to have the same shape as output;", " output.size(", d,
                ") = ", full[d], " but got grad_output.size(", d, ") = ", grad_output.size(d));
  }
  return {input_size.begin(), input_size.end()};
}

// The layouts PyTorch's meta kernels give: 1-D results are contiguous; 2-D and 3-D forward
// results follow the input's suggested format (channels_last stays so); backward results
// follow grad_output's format only for the ops whose meta kernel says so.
at::MemoryFormat format_following(const at::Tensor& t, int spatial) {
  return spatial == 1 ? at::MemoryFormat::Contiguous : t.suggest_memory_format();
}

// Describes one upsample op to the shared implementation below.
struct Upsample {
  const char* name;          // "aten::upsample_nearest2d"
  int spatial;               // 1, 2 or 3
  bool grad_follows_format;  // backward result in grad_output's suggested format
};

at::Tensor forward(const Upsample& op, const at::Tensor& self, at::IntArrayRef output_size,
                   const kernels::InterpolateParams& params) {
  const c10::Device device = nn::check_device(op.name, {&self});
  const std::vector<int64_t> shape = checked_forward_shape(self, op.spatial, output_size);
  const c10::DeviceGuard guard(device);
  at::Tensor out =
      at::empty(shape, self.options().memory_format(format_following(self, op.spatial)));
  if (out.numel() == 0) return out;
  const kernels::TensorView out_view = view_of(out), in_view = view_of(self);
  stream_for(out).enqueue(op.name,
                          [=] { kernels::interpolate_forward(out_view, in_view, params); });
  return out;
}

at::Tensor backward(const Upsample& op, const at::Tensor& grad_output, at::IntArrayRef output_size,
                    at::IntArrayRef input_size, const kernels::InterpolateParams& params) {
  const c10::Device device = nn::check_device(op.name, {&grad_output});
  const std::vector<int64_t> shape =
      checked_backward_shape(grad_output, op.spatial, output_size, input_size);
  const c10::DeviceGuard guard(device);
  const at::MemoryFormat format = op.grad_follows_format ? format_following(grad_output, op.spatial)
                                                         : at::MemoryFormat::Contiguous;
  at::Tensor grad_input = at::empty(shape, grad_output.options().memory_format(format));
  if (grad_input.numel() == 0) return grad_input;
  const kernels::TensorView gi = view_of(grad_input), go = view_of(grad_output);
  stream_for(grad_input).enqueue(op.name, [=] { kernels::interpolate_backward(gi, go, params); });
  return grad_input;
}

// An empty tensor at the shape and layout a forward result has, for the host fallback to
// copy its result into (keeping the meta kernel's strides).
at::Tensor forward_result_for_fallback(const Upsample& op, const at::Tensor& self,
                                       at::IntArrayRef output_size) {
  return at::empty(checked_forward_shape(self, op.spatial, output_size),
                   self.options().memory_format(format_following(self, op.spatial)));
}

at::Tensor backward_result_for_fallback(const Upsample& op, const at::Tensor& grad_output,
                                        at::IntArrayRef output_size, at::IntArrayRef input_size) {
  const at::MemoryFormat format = op.grad_follows_format ? format_following(grad_output, op.spatial)
                                                         : at::MemoryFormat::Contiguous;
  return at::empty(checked_backward_shape(grad_output, op.spatial, output_size, input_size),
                   grad_output.options().memory_format(format));
}

constexpr Upsample kNearest1d{"aten::upsample_nearest1d", 1, false};
constexpr Upsample kNearest1dBackward{"aten::upsample_nearest1d_backward", 1, false};
constexpr Upsample kNearest2d{"aten::upsample_nearest2d", 2, true};
constexpr Upsample kNearest2dBackward{"aten::upsample_nearest2d_backward", 2, true};
constexpr Upsample kNearest3d{"aten::upsample_nearest3d", 3, false};
constexpr Upsample kNearest3dBackward{"aten::upsample_nearest3d_backward", 3, false};
constexpr Upsample kExact1d{"aten::_upsample_nearest_exact1d", 1, false};
constexpr Upsample kExact1dBackward{"aten::_upsample_nearest_exact1d_backward", 1, false};
constexpr Upsample kExact2d{"aten::_upsample_nearest_exact2d", 2, true};
constexpr Upsample kExact2dBackward{"aten::_upsample_nearest_exact2d_backward", 2, true};
constexpr Upsample kExact3d{"aten::_upsample_nearest_exact3d", 3, false};
constexpr Upsample kExact3dBackward{"aten::_upsample_nearest_exact3d_backward", 3, false};
constexpr Upsample kLinear1d{"aten::upsample_linear1d", 1, false};
constexpr Upsample kLinear1dBackward{"aten::upsample_linear1d_backward", 1, false};
constexpr Upsample kBilinear2d{"aten::upsample_bilinear2d", 2, true};
constexpr Upsample kBilinear2dBackward{"aten::upsample_bilinear2d_backward", 2, true};
constexpr Upsample kTrilinear3d{"aten::upsample_trilinear3d", 3, true};
constexpr Upsample kTrilinear3dBackward{"aten::upsample_trilinear3d_backward", 3, true};
constexpr Upsample kBicubic2d{"aten::upsample_bicubic2d", 2, true};
constexpr Upsample kBicubic2dBackward{"aten::upsample_bicubic2d_backward", 2, false};

}  // namespace

namespace {

// Nearest-neighbour modes copy elements, so uint8 (which the CPU takes for them) runs through
// the fp32 kernel exactly: 0-255 survive the round trip.
bool nearest_dtype(const at::Tensor& t) {
  return nn::is_nn_dtype(t.scalar_type()) || t.scalar_type() == at::kByte;
}

at::Tensor nearest_forward(const Upsample& up, const at::Tensor& self, at::IntArrayRef output_size,
                           const kernels::InterpolateParams& params) {
  if (self.scalar_type() != at::kByte) return forward(up, self, output_size, params);
  return forward(up, self.to(at::kFloat), output_size, params).to(at::kByte);
}

}  // namespace

// Each op below: float64 (not a NeuronCore type) goes to the host fallback, into a result of
// the meta kernel's layout; fp32/bf16/fp16 run the kernel. The .out forms compute, then copy.

at::Tensor upsample_nearest1d(const at::Tensor& self, at::IntArrayRef output_size, Scale scales) {
  if (!nearest_dtype(self)) {
    at::Tensor out = forward_result_for_fallback(kNearest1d, self, output_size);
    return OPENNEURON_FALLBACK(upsample_nearest1d_out, self, output_size, scales, out);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_nearest1d");
  return nearest_forward(kNearest1d, self, output_size,
                         params_of(InterpolateMode::Nearest, false, {scales}));
}

at::Tensor& upsample_nearest1d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                   Scale scales, at::Tensor& out) {
  if (!nearest_dtype(self) || out.scalar_type() != self.scalar_type()) {
    return OPENNEURON_FALLBACK(upsample_nearest1d_out, self, output_size, scales, out);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_nearest1d.out");
  nn::check_device("aten::upsample_nearest1d.out", {&self, &out});
  return assign_out(out, bridge::upsample_nearest1d(self, output_size, scales));
}

at::Tensor upsample_nearest1d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                       at::IntArrayRef input_size, Scale scales) {
  if (!nn::is_nn_dtype(grad_output.scalar_type())) {
    at::Tensor grad_input =
        backward_result_for_fallback(kNearest1dBackward, grad_output, output_size, input_size);
    return OPENNEURON_FALLBACK(upsample_nearest1d_backward_grad_input, grad_output, output_size,
                               input_size, scales, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_nearest1d_backward");
  return backward(kNearest1dBackward, grad_output, output_size, input_size,
                  params_of(InterpolateMode::Nearest, false, {scales}));
}

at::Tensor& upsample_nearest1d_backward_out(const at::Tensor& grad_output,
                                            at::IntArrayRef output_size, at::IntArrayRef input_size,
                                            Scale scales, at::Tensor& grad_input) {
  if (!nn::all_nn_dtypes({&grad_output, &grad_input})) {
    return OPENNEURON_FALLBACK(upsample_nearest1d_backward_grad_input, grad_output, output_size,
                               input_size, scales, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_nearest1d_backward.grad_input");
  nn::check_device("aten::upsample_nearest1d_backward.grad_input", {&grad_output, &grad_input});
  return assign_out(grad_input, bridge::upsample_nearest1d_backward(grad_output, output_size,
                                                                    input_size, scales));
}

at::Tensor upsample_nearest2d(const at::Tensor& self, at::IntArrayRef output_size, Scale scales_h,
                              Scale scales_w) {
  if (!nearest_dtype(self)) {
    at::Tensor out = forward_result_for_fallback(kNearest2d, self, output_size);
    return OPENNEURON_FALLBACK(upsample_nearest2d_out, self, output_size, scales_h, scales_w, out);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_nearest2d");
  return nearest_forward(kNearest2d, self, output_size,
                         params_of(InterpolateMode::Nearest, false, {scales_h, scales_w}));
}

at::Tensor& upsample_nearest2d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                   Scale scales_h, Scale scales_w, at::Tensor& out) {
  if (!nearest_dtype(self) || out.scalar_type() != self.scalar_type()) {
    return OPENNEURON_FALLBACK(upsample_nearest2d_out, self, output_size, scales_h, scales_w, out);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_nearest2d.out");
  nn::check_device("aten::upsample_nearest2d.out", {&self, &out});
  return assign_out(out, bridge::upsample_nearest2d(self, output_size, scales_h, scales_w));
}

at::Tensor upsample_nearest2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                       at::IntArrayRef input_size, Scale scales_h, Scale scales_w) {
  if (!nn::is_nn_dtype(grad_output.scalar_type())) {
    at::Tensor grad_input =
        backward_result_for_fallback(kNearest2dBackward, grad_output, output_size, input_size);
    return OPENNEURON_FALLBACK(upsample_nearest2d_backward_grad_input, grad_output, output_size,
                               input_size, scales_h, scales_w, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_nearest2d_backward");
  return backward(kNearest2dBackward, grad_output, output_size, input_size,
                  params_of(InterpolateMode::Nearest, false, {scales_h, scales_w}));
}

at::Tensor& upsample_nearest2d_backward_out(const at::Tensor& grad_output,
                                            at::IntArrayRef output_size, at::IntArrayRef input_size,
                                            Scale scales_h, Scale scales_w,
                                            at::Tensor& grad_input) {
  if (!nn::all_nn_dtypes({&grad_output, &grad_input})) {
    return OPENNEURON_FALLBACK(upsample_nearest2d_backward_grad_input, grad_output, output_size,
                               input_size, scales_h, scales_w, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_nearest2d_backward.grad_input");
  nn::check_device("aten::upsample_nearest2d_backward.grad_input", {&grad_output, &grad_input});
  return assign_out(grad_input, bridge::upsample_nearest2d_backward(
                                    grad_output, output_size, input_size, scales_h, scales_w));
}

at::Tensor upsample_nearest3d(const at::Tensor& self, at::IntArrayRef output_size, Scale scales_d,
                              Scale scales_h, Scale scales_w) {
  if (!nearest_dtype(self)) {
    at::Tensor out = forward_result_for_fallback(kNearest3d, self, output_size);
    return OPENNEURON_FALLBACK(upsample_nearest3d_out, self, output_size, scales_d, scales_h,
                               scales_w, out);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_nearest3d");
  return nearest_forward(
      kNearest3d, self, output_size,
      params_of(InterpolateMode::Nearest, false, {scales_d, scales_h, scales_w}));
}

at::Tensor& upsample_nearest3d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                   Scale scales_d, Scale scales_h, Scale scales_w,
                                   at::Tensor& out) {
  if (!nearest_dtype(self) || out.scalar_type() != self.scalar_type()) {
    return OPENNEURON_FALLBACK(upsample_nearest3d_out, self, output_size, scales_d, scales_h,
                               scales_w, out);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_nearest3d.out");
  nn::check_device("aten::upsample_nearest3d.out", {&self, &out});
  return assign_out(out,
                    bridge::upsample_nearest3d(self, output_size, scales_d, scales_h, scales_w));
}

at::Tensor upsample_nearest3d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                       at::IntArrayRef input_size, Scale scales_d, Scale scales_h,
                                       Scale scales_w) {
  if (!nn::is_nn_dtype(grad_output.scalar_type())) {
    at::Tensor grad_input =
        backward_result_for_fallback(kNearest3dBackward, grad_output, output_size, input_size);
    return OPENNEURON_FALLBACK(upsample_nearest3d_backward_grad_input, grad_output, output_size,
                               input_size, scales_d, scales_h, scales_w, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_nearest3d_backward");
  return backward(kNearest3dBackward, grad_output, output_size, input_size,
                  params_of(InterpolateMode::Nearest, false, {scales_d, scales_h, scales_w}));
}

at::Tensor& upsample_nearest3d_backward_out(const at::Tensor& grad_output,
                                            at::IntArrayRef output_size, at::IntArrayRef input_size,
                                            Scale scales_d, Scale scales_h, Scale scales_w,
                                            at::Tensor& grad_input) {
  if (!nn::all_nn_dtypes({&grad_output, &grad_input})) {
    return OPENNEURON_FALLBACK(upsample_nearest3d_backward_grad_input, grad_output, output_size,
                               input_size, scales_d, scales_h, scales_w, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_nearest3d_backward.grad_input");
  nn::check_device("aten::upsample_nearest3d_backward.grad_input", {&grad_output, &grad_input});
  return assign_out(grad_input,
                    bridge::upsample_nearest3d_backward(grad_output, output_size, input_size,
                                                        scales_d, scales_h, scales_w));
}

at::Tensor upsample_nearest_exact1d(const at::Tensor& self, at::IntArrayRef output_size,
                                    Scale scales) {
  if (!nearest_dtype(self)) {
    at::Tensor out = forward_result_for_fallback(kExact1d, self, output_size);
    return OPENNEURON_FALLBACK(_upsample_nearest_exact1d_out, self, output_size, scales, out);
  }
  OPENNEURON_NATIVE_OP("aten::_upsample_nearest_exact1d");
  return nearest_forward(kExact1d, self, output_size,
                         params_of(InterpolateMode::NearestExact, false, {scales}));
}

at::Tensor& upsample_nearest_exact1d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                         Scale scales, at::Tensor& out) {
  if (!nearest_dtype(self) || out.scalar_type() != self.scalar_type()) {
    return OPENNEURON_FALLBACK(_upsample_nearest_exact1d_out, self, output_size, scales, out);
  }
  OPENNEURON_NATIVE_OP("aten::_upsample_nearest_exact1d.out");
  nn::check_device("aten::_upsample_nearest_exact1d.out", {&self, &out});
  return assign_out(out, bridge::upsample_nearest_exact1d(self, output_size, scales));
}

at::Tensor upsample_nearest_exact1d_backward(const at::Tensor& grad_output,
                                             at::IntArrayRef output_size,
                                             at::IntArrayRef input_size, Scale scales) {
  if (!nn::is_nn_dtype(grad_output.scalar_type())) {
    at::Tensor grad_input =
        backward_result_for_fallback(kExact1dBackward, grad_output, output_size, input_size);
    return OPENNEURON_FALLBACK(_upsample_nearest_exact1d_backward_grad_input, grad_output,
                               output_size, input_size, scales, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::_upsample_nearest_exact1d_backward");
  return backward(kExact1dBackward, grad_output, output_size, input_size,
                  params_of(InterpolateMode::NearestExact, false, {scales}));
}

at::Tensor& upsample_nearest_exact1d_backward_out(const at::Tensor& grad_output,
                                                  at::IntArrayRef output_size,
                                                  at::IntArrayRef input_size, Scale scales,
                                                  at::Tensor& grad_input) {
  if (!nn::all_nn_dtypes({&grad_output, &grad_input})) {
    return OPENNEURON_FALLBACK(_upsample_nearest_exact1d_backward_grad_input, grad_output,
                               output_size, input_size, scales, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::_upsample_nearest_exact1d_backward.grad_input");
  nn::check_device("aten::_upsample_nearest_exact1d_backward.grad_input",
                   {&grad_output, &grad_input});
  return assign_out(grad_input, bridge::upsample_nearest_exact1d_backward(grad_output, output_size,
                                                                          input_size, scales));
}

at::Tensor upsample_nearest_exact2d(const at::Tensor& self, at::IntArrayRef output_size,
                                    Scale scales_h, Scale scales_w) {
  if (!nearest_dtype(self)) {
    at::Tensor out = forward_result_for_fallback(kExact2d, self, output_size);
    return OPENNEURON_FALLBACK(_upsample_nearest_exact2d_out, self, output_size, scales_h, scales_w,
                               out);
  }
  OPENNEURON_NATIVE_OP("aten::_upsample_nearest_exact2d");
  return nearest_forward(kExact2d, self, output_size,
                         params_of(InterpolateMode::NearestExact, false, {scales_h, scales_w}));
}

at::Tensor& upsample_nearest_exact2d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                         Scale scales_h, Scale scales_w, at::Tensor& out) {
  if (!nearest_dtype(self) || out.scalar_type() != self.scalar_type()) {
    return OPENNEURON_FALLBACK(_upsample_nearest_exact2d_out, self, output_size, scales_h, scales_w,
                               out);
  }
  OPENNEURON_NATIVE_OP("aten::_upsample_nearest_exact2d.out");
  nn::check_device("aten::_upsample_nearest_exact2d.out", {&self, &out});
  return assign_out(out, bridge::upsample_nearest_exact2d(self, output_size, scales_h, scales_w));
}

at::Tensor upsample_nearest_exact2d_backward(const at::Tensor& grad_output,
                                             at::IntArrayRef output_size,
                                             at::IntArrayRef input_size, Scale scales_h,
                                             Scale scales_w) {
  if (!nn::is_nn_dtype(grad_output.scalar_type())) {
    at::Tensor grad_input =
        backward_result_for_fallback(kExact2dBackward, grad_output, output_size, input_size);
    return OPENNEURON_FALLBACK(_upsample_nearest_exact2d_backward_grad_input, grad_output,
                               output_size, input_size, scales_h, scales_w, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::_upsample_nearest_exact2d_backward");
  return backward(kExact2dBackward, grad_output, output_size, input_size,
                  params_of(InterpolateMode::NearestExact, false, {scales_h, scales_w}));
}

at::Tensor& upsample_nearest_exact2d_backward_out(const at::Tensor& grad_output,
                                                  at::IntArrayRef output_size,
                                                  at::IntArrayRef input_size, Scale scales_h,
                                                  Scale scales_w, at::Tensor& grad_input) {
  if (!nn::all_nn_dtypes({&grad_output, &grad_input})) {
    return OPENNEURON_FALLBACK(_upsample_nearest_exact2d_backward_grad_input, grad_output,
                               output_size, input_size, scales_h, scales_w, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::_upsample_nearest_exact2d_backward.grad_input");
  nn::check_device("aten::_upsample_nearest_exact2d_backward.grad_input",
                   {&grad_output, &grad_input});
  return assign_out(grad_input, bridge::upsample_nearest_exact2d_backward(
                                    grad_output, output_size, input_size, scales_h, scales_w));
}

at::Tensor upsample_nearest_exact3d(const at::Tensor& self, at::IntArrayRef output_size,
                                    Scale scales_d, Scale scales_h, Scale scales_w) {
  if (!nearest_dtype(self)) {
    at::Tensor out = forward_result_for_fallback(kExact3d, self, output_size);
    return OPENNEURON_FALLBACK(_upsample_nearest_exact3d_out, self, output_size, scales_d, scales_h,
                               scales_w, out);
  }
  OPENNEURON_NATIVE_OP("aten::_upsample_nearest_exact3d");
  return nearest_forward(
      kExact3d, self, output_size,
      params_of(InterpolateMode::NearestExact, false, {scales_d, scales_h, scales_w}));
}

at::Tensor& upsample_nearest_exact3d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                         Scale scales_d, Scale scales_h, Scale scales_w,
                                         at::Tensor& out) {
  if (!nearest_dtype(self) || out.scalar_type() != self.scalar_type()) {
    return OPENNEURON_FALLBACK(_upsample_nearest_exact3d_out, self, output_size, scales_d, scales_h,
                               scales_w, out);
  }
  OPENNEURON_NATIVE_OP("aten::_upsample_nearest_exact3d.out");
  nn::check_device("aten::_upsample_nearest_exact3d.out", {&self, &out});
  return assign_out(
      out, bridge::upsample_nearest_exact3d(self, output_size, scales_d, scales_h, scales_w));
}

at::Tensor upsample_nearest_exact3d_backward(const at::Tensor& grad_output,
                                             at::IntArrayRef output_size,
                                             at::IntArrayRef input_size, Scale scales_d,
                                             Scale scales_h, Scale scales_w) {
  if (!nn::is_nn_dtype(grad_output.scalar_type())) {
    at::Tensor grad_input =
        backward_result_for_fallback(kExact3dBackward, grad_output, output_size, input_size);
    return OPENNEURON_FALLBACK(_upsample_nearest_exact3d_backward_grad_input, grad_output,
                               output_size, input_size, scales_d, scales_h, scales_w, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::_upsample_nearest_exact3d_backward");
  return backward(kExact3dBackward, grad_output, output_size, input_size,
                  params_of(InterpolateMode::NearestExact, false, {scales_d, scales_h, scales_w}));
}

at::Tensor& upsample_nearest_exact3d_backward_out(const at::Tensor& grad_output,
                                                  at::IntArrayRef output_size,
                                                  at::IntArrayRef input_size, Scale scales_d,
                                                  Scale scales_h, Scale scales_w,
                                                  at::Tensor& grad_input) {
  if (!nn::all_nn_dtypes({&grad_output, &grad_input})) {
    return OPENNEURON_FALLBACK(_upsample_nearest_exact3d_backward_grad_input, grad_output,
                               output_size, input_size, scales_d, scales_h, scales_w, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::_upsample_nearest_exact3d_backward.grad_input");
  nn::check_device("aten::_upsample_nearest_exact3d_backward.grad_input",
                   {&grad_output, &grad_input});
  return assign_out(grad_input,
                    bridge::upsample_nearest_exact3d_backward(grad_output, output_size, input_size,
                                                              scales_d, scales_h, scales_w));
}

at::Tensor upsample_linear1d(const at::Tensor& self, at::IntArrayRef output_size,
                             bool align_corners, Scale scales) {
  if (!nn::is_nn_dtype(self.scalar_type())) {
    at::Tensor out = forward_result_for_fallback(kLinear1d, self, output_size);
    return OPENNEURON_FALLBACK(upsample_linear1d_out, self, output_size, align_corners, scales,
                               out);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_linear1d");
  return forward(kLinear1d, self, output_size,
                 params_of(InterpolateMode::Linear, align_corners, {scales}));
}

at::Tensor& upsample_linear1d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                  bool align_corners, Scale scales, at::Tensor& out) {
  if (!nn::all_nn_dtypes({&self, &out})) {
    return OPENNEURON_FALLBACK(upsample_linear1d_out, self, output_size, align_corners, scales,
                               out);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_linear1d.out");
  nn::check_device("aten::upsample_linear1d.out", {&self, &out});
  return assign_out(out, bridge::upsample_linear1d(self, output_size, align_corners, scales));
}

at::Tensor upsample_linear1d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                      at::IntArrayRef input_size, bool align_corners,
                                      Scale scales) {
  if (!nn::is_nn_dtype(grad_output.scalar_type())) {
    at::Tensor grad_input =
        backward_result_for_fallback(kLinear1dBackward, grad_output, output_size, input_size);
    return OPENNEURON_FALLBACK(upsample_linear1d_backward_grad_input, grad_output, output_size,
                               input_size, align_corners, scales, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_linear1d_backward");
  return backward(kLinear1dBackward, grad_output, output_size, input_size,
                  params_of(InterpolateMode::Linear, align_corners, {scales}));
}

at::Tensor& upsample_linear1d_backward_out(const at::Tensor& grad_output,
                                           at::IntArrayRef output_size, at::IntArrayRef input_size,
                                           bool align_corners, Scale scales,
                                           at::Tensor& grad_input) {
  if (!nn::all_nn_dtypes({&grad_output, &grad_input})) {
    return OPENNEURON_FALLBACK(upsample_linear1d_backward_grad_input, grad_output, output_size,
                               input_size, align_corners, scales, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_linear1d_backward.grad_input");
  nn::check_device("aten::upsample_linear1d_backward.grad_input", {&grad_output, &grad_input});
  return assign_out(grad_input, bridge::upsample_linear1d_backward(
                                    grad_output, output_size, input_size, align_corners, scales));
}

at::Tensor upsample_bilinear2d(const at::Tensor& self, at::IntArrayRef output_size,
                               bool align_corners, Scale scales_h, Scale scales_w) {
  if (!nn::is_nn_dtype(self.scalar_type())) {
    at::Tensor out = forward_result_for_fallback(kBilinear2d, self, output_size);
    return OPENNEURON_FALLBACK(upsample_bilinear2d_out, self, output_size, align_corners, scales_h,
                               scales_w, out);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_bilinear2d");
  return forward(kBilinear2d, self, output_size,
                 params_of(InterpolateMode::Linear, align_corners, {scales_h, scales_w}));
}

at::Tensor& upsample_bilinear2d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                    bool align_corners, Scale scales_h, Scale scales_w,
                                    at::Tensor& out) {
  if (!nn::all_nn_dtypes({&self, &out})) {
    return OPENNEURON_FALLBACK(upsample_bilinear2d_out, self, output_size, align_corners, scales_h,
                               scales_w, out);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_bilinear2d.out");
  nn::check_device("aten::upsample_bilinear2d.out", {&self, &out});
  return assign_out(
      out, bridge::upsample_bilinear2d(self, output_size, align_corners, scales_h, scales_w));
}

at::Tensor upsample_bilinear2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                        at::IntArrayRef input_size, bool align_corners,
                                        Scale scales_h, Scale scales_w) {
  if (!nn::is_nn_dtype(grad_output.scalar_type())) {
    at::Tensor grad_input =
        backward_result_for_fallback(kBilinear2dBackward, grad_output, output_size, input_size);
    return OPENNEURON_FALLBACK(upsample_bilinear2d_backward_grad_input, grad_output, output_size,
                               input_size, align_corners, scales_h, scales_w, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_bilinear2d_backward");
  return backward(kBilinear2dBackward, grad_output, output_size, input_size,
                  params_of(InterpolateMode::Linear, align_corners, {scales_h, scales_w}));
}

at::Tensor& upsample_bilinear2d_backward_out(const at::Tensor& grad_output,
                                             at::IntArrayRef output_size,
                                             at::IntArrayRef input_size, bool align_corners,
                                             Scale scales_h, Scale scales_w,
                                             at::Tensor& grad_input) {
  if (!nn::all_nn_dtypes({&grad_output, &grad_input})) {
    return OPENNEURON_FALLBACK(upsample_bilinear2d_backward_grad_input, grad_output, output_size,
                               input_size, align_corners, scales_h, scales_w, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_bilinear2d_backward.grad_input");
  nn::check_device("aten::upsample_bilinear2d_backward.grad_input", {&grad_output, &grad_input});
  return assign_out(grad_input,
                    bridge::upsample_bilinear2d_backward(grad_output, output_size, input_size,
                                                         align_corners, scales_h, scales_w));
}

at::Tensor upsample_trilinear3d(const at::Tensor& self, at::IntArrayRef output_size,
                                bool align_corners, Scale scales_d, Scale scales_h,
                                Scale scales_w) {
  if (!nn::is_nn_dtype(self.scalar_type())) {
    at::Tensor out = forward_result_for_fallback(kTrilinear3d, self, output_size);
    return OPENNEURON_FALLBACK(upsample_trilinear3d_out, self, output_size, align_corners, scales_d,
                               scales_h, scales_w, out);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_trilinear3d");
  return forward(kTrilinear3d, self, output_size,
                 params_of(InterpolateMode::Linear, align_corners, {scales_d, scales_h, scales_w}));
}

at::Tensor& upsample_trilinear3d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                     bool align_corners, Scale scales_d, Scale scales_h,
                                     Scale scales_w, at::Tensor& out) {
  if (!nn::all_nn_dtypes({&self, &out})) {
    return OPENNEURON_FALLBACK(upsample_trilinear3d_out, self, output_size, align_corners, scales_d,
                               scales_h, scales_w, out);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_trilinear3d.out");
  nn::check_device("aten::upsample_trilinear3d.out", {&self, &out});
  return assign_out(out, bridge::upsample_trilinear3d(self, output_size, align_corners, scales_d,
                                                      scales_h, scales_w));
}

at::Tensor upsample_trilinear3d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                         at::IntArrayRef input_size, bool align_corners,
                                         Scale scales_d, Scale scales_h, Scale scales_w) {
  if (!nn::is_nn_dtype(grad_output.scalar_type())) {
    at::Tensor grad_input =
        backward_result_for_fallback(kTrilinear3dBackward, grad_output, output_size, input_size);
    return OPENNEURON_FALLBACK(upsample_trilinear3d_backward_grad_input, grad_output, output_size,
                               input_size, align_corners, scales_d, scales_h, scales_w, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_trilinear3d_backward");
  return backward(
      kTrilinear3dBackward, grad_output, output_size, input_size,
      params_of(InterpolateMode::Linear, align_corners, {scales_d, scales_h, scales_w}));
}

at::Tensor& upsample_trilinear3d_backward_out(const at::Tensor& grad_output,
                                              at::IntArrayRef output_size,
                                              at::IntArrayRef input_size, bool align_corners,
                                              Scale scales_d, Scale scales_h, Scale scales_w,
                                              at::Tensor& grad_input) {
  if (!nn::all_nn_dtypes({&grad_output, &grad_input})) {
    return OPENNEURON_FALLBACK(upsample_trilinear3d_backward_grad_input, grad_output, output_size,
                               input_size, align_corners, scales_d, scales_h, scales_w, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_trilinear3d_backward.grad_input");
  nn::check_device("aten::upsample_trilinear3d_backward.grad_input", {&grad_output, &grad_input});
  return assign_out(grad_input, bridge::upsample_trilinear3d_backward(
                                    grad_output, output_size, input_size, align_corners, scales_d,
                                    scales_h, scales_w));
}

at::Tensor upsample_bicubic2d(const at::Tensor& self, at::IntArrayRef output_size,
                              bool align_corners, Scale scales_h, Scale scales_w) {
  if (!nn::is_nn_dtype(self.scalar_type())) {
    at::Tensor out = forward_result_for_fallback(kBicubic2d, self, output_size);
    return OPENNEURON_FALLBACK(upsample_bicubic2d_out, self, output_size, align_corners, scales_h,
                               scales_w, out);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_bicubic2d");
  return forward(kBicubic2d, self, output_size,
                 params_of(InterpolateMode::Cubic, align_corners, {scales_h, scales_w}));
}

at::Tensor& upsample_bicubic2d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                   bool align_corners, Scale scales_h, Scale scales_w,
                                   at::Tensor& out) {
  if (!nn::all_nn_dtypes({&self, &out})) {
    return OPENNEURON_FALLBACK(upsample_bicubic2d_out, self, output_size, align_corners, scales_h,
                               scales_w, out);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_bicubic2d.out");
  nn::check_device("aten::upsample_bicubic2d.out", {&self, &out});
  return assign_out(
      out, bridge::upsample_bicubic2d(self, output_size, align_corners, scales_h, scales_w));
}

at::Tensor upsample_bicubic2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                       at::IntArrayRef input_size, bool align_corners,
                                       Scale scales_h, Scale scales_w) {
  if (!nn::is_nn_dtype(grad_output.scalar_type())) {
    at::Tensor grad_input =
        backward_result_for_fallback(kBicubic2dBackward, grad_output, output_size, input_size);
    return OPENNEURON_FALLBACK(upsample_bicubic2d_backward_grad_input, grad_output, output_size,
                               input_size, align_corners, scales_h, scales_w, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_bicubic2d_backward");
  return backward(kBicubic2dBackward, grad_output, output_size, input_size,
                  params_of(InterpolateMode::Cubic, align_corners, {scales_h, scales_w}));
}

at::Tensor& upsample_bicubic2d_backward_out(const at::Tensor& grad_output,
                                            at::IntArrayRef output_size, at::IntArrayRef input_size,
                                            bool align_corners, Scale scales_h, Scale scales_w,
                                            at::Tensor& grad_input) {
  if (!nn::all_nn_dtypes({&grad_output, &grad_input})) {
    return OPENNEURON_FALLBACK(upsample_bicubic2d_backward_grad_input, grad_output, output_size,
                               input_size, align_corners, scales_h, scales_w, grad_input);
  }
  OPENNEURON_NATIVE_OP("aten::upsample_bicubic2d_backward.grad_input");
  nn::check_device("aten::upsample_bicubic2d_backward.grad_input", {&grad_output, &grad_input});
  return assign_out(grad_input,
                    bridge::upsample_bicubic2d_backward(grad_output, output_size, input_size,
                                                        align_corners, scales_h, scales_w));
}

}  // namespace openneuron::bridge
