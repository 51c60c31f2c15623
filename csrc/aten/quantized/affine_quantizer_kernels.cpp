// The affine quantize/dequantize kernels of the device, registered on PyTorch's quantizer
// dispatch stubs for PrivateUse1. PyTorch's quantizers validate the arguments (float input,
// zero point in range, axis, devices) and then call these; each computes with the device's
// dense ops, in the order and precision of PyTorch's CPU kernels, so the integers agree.
#include <ATen/native/quantized/AffineQuantizer.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/nan_to_num.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/ops/round.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>

#include "aten/core/op_tracking.h"
#include "aten/quantized/quantized_views.h"

namespace openneuron::bridge::quantized {
namespace {

// Rounded products beyond this magnitude saturate anyway; bounding them first keeps the
// float -> int64 conversion defined. NaN maps to the lower bound (CPU's x86 conversion result).
constexpr double kRoundedBound = 1099511627776.0;  // 2^40, exact in float

// Integers of round(scaled) + zero_points, clamped to the dtype's range (int64).
at::Tensor clamp_to_range(const at::Tensor& scaled, const at::Tensor& zero_points, int64_t low,
                          int64_t high) {
  auto rounded = at::nan_to_num(at::round(scaled), -kRoundedBound, kRoundedBound, -kRoundedBound);
  return rounded.clamp(-kRoundedBound, kRoundedBound)
      .to(at::kLong)
      .add(zero_points)
      .clamp(low, high);
}

// The shape that broadcasts a per-channel vector along `axis` of a tensor of `dim` dims.
std::vector<int64_t> channel_shape(int64_t dim, int64_t axis, int64_t channels) {
  std::vector<int64_t> shape(static_cast<size_t>(dim), 1);
  shape[static_cast<size_t>(axis)] = channels;
  return shape;
}

// 1 / float(scale), as PyTorch's CPU kernels compute their inverse scale.
at::Tensor inverse_scales(const at::Tensor& scales, const at::Tensor& like) {
  return at::reciprocal(scales.to(like.device(), at::kFloat));
}

void quantize_per_tensor(const at::Tensor& rtensor, at::Tensor& qtensor, double scale,
                         int64_t zero_point) {
  OPENNEURON_NATIVE_OP("aten::quantize_per_tensor");
  const auto [low, high] = integer_range(qtensor.scalar_type());
  const float inverse_scale = 1.0f / static_cast<float>(scale);
  auto zero = at::scalar_tensor(zero_point, rtensor.options().dtype(at::kLong));
  auto integers = clamp_to_range(rtensor.mul(inverse_scale), zero, low, high);
  integer_view(qtensor).copy_(integers);
}

void dequantize_per_tensor(const at::Tensor& qtensor, at::Tensor& rtensor, double scale,
                           int64_t zero_point) {
  OPENNEURON_NATIVE_OP("aten::dequantize.self");
  auto shifted = integer_view(qtensor).to(at::kLong).sub(zero_point).to(at::kFloat);
  rtensor.copy_(shifted.mul(static_cast<float>(scale)));
}

void quantize_per_channel(const at::Tensor& rtensor, at::Tensor& qtensor, const at::Tensor& scales,
                          const at::Tensor& zero_points, int64_t axis) {
  OPENNEURON_NATIVE_OP("aten::quantize_per_channel");
  const auto [low, high] = integer_range(qtensor.scalar_type());
  const auto shape = channel_shape(rtensor.dim(), axis, rtensor.size(axis));
  auto inverse = inverse_scales(scales, rtensor).reshape(shape);
  auto zeros = zero_points.to(rtensor.device(), at::kLong).reshape(shape);
  integer_view(qtensor).copy_(clamp_to_range(rtensor.mul(inverse), zeros, low, high));
}

void dequantize_per_channel(const at::Tensor& qtensor, at::Tensor& rtensor,
                            const at::Tensor& scales, const at::Tensor& zero_points, int64_t axis) {
  OPENNEURON_NATIVE_OP("aten::dequantize.self");
  const auto shape = channel_shape(qtensor.dim(), axis, qtensor.size(axis));
  // float(q) - zero point, times the scale, in float32 (a NeuronCore has no float64): the CPU
  // multiplies by the float64 scale and rounds once, so a value can differ by 1 ulp.
  auto zeros = zero_points.to(rtensor.device(), at::kLong).reshape(shape);
  auto float_scales = scales.to(rtensor.device(), at::kFloat).reshape(shape);
  auto shifted = integer_view(qtensor).to(at::kFloat).sub(zeros);
  rtensor.copy_(shifted.mul(float_scales));
}

// Float zero points (per_channel_affine_float_qparams): round(x / scale + zero_point), a zero
// scale counting as 1, as PyTorch's CPU kernel does.
void quantize_per_channel_float_qparams(const at::Tensor& rtensor, at::Tensor& qtensor,
                                        const at::Tensor& scales, const at::Tensor& zero_points,
                                        int64_t axis) {
  OPENNEURON_NATIVE_OP("aten::quantize_per_channel");
  const auto [low, high] = integer_range(qtensor.scalar_type());
  const auto shape = channel_shape(rtensor.dim(), axis, rtensor.size(axis));
  auto float_scales = scales.to(rtensor.device(), at::kFloat);
  auto inverse =
      at::where(float_scales.eq(0), at::ones_like(float_scales), at::reciprocal(float_scales))
          .reshape(shape);
  auto zeros = zero_points.to(rtensor.device(), at::kFloat).reshape(shape);
  auto none = at::zeros({}, rtensor.options().dtype(at::kLong));
  auto integers = clamp_to_range(rtensor.mul(inverse).add(zeros), none, low, high);
  integer_view(qtensor).copy_(integers);
}

void dequantize_per_channel_float_qparams(const at::Tensor& qtensor, at::Tensor& rtensor,
                                          const at::Tensor& scales, const at::Tensor& zero_points,
                                          int64_t axis) {
  OPENNEURON_NATIVE_OP("aten::dequantize.self");
  const auto shape = channel_shape(qtensor.dim(), axis, qtensor.size(axis));
  auto zeros = zero_points.to(rtensor.device(), at::kFloat).reshape(shape);
  auto float_scales = scales.to(rtensor.device(), at::kFloat).reshape(shape);
  rtensor.copy_(integer_view(qtensor).to(at::kFloat).sub(zeros).mul(float_scales));
}

// Bit-packed dtypes: value i of a byte sits at bits [i * width, (i + 1) * width), the first
// value in the low bits, as PyTorch packs them.
int64_t bit_width(c10::ScalarType type) { return type == c10::kQUInt4x2 ? 4 : 2; }

at::Tensor place_values(int64_t width, const at::Tensor& like) {
  // 1, 2^width, 2^(2 width), ... one per value in a byte.
  auto positions = at::arange(8 / width, like.options().dtype(at::kLong));
  return at::pow(2, positions.mul(width));
}

void quantize_sub_byte(const at::Tensor& rtensor, at::Tensor& qtensor, float scale,
                       float zero_point) {
  OPENNEURON_NATIVE_OP("aten::quantize_per_tensor");
  const auto [low, high] = integer_range(qtensor.scalar_type());
  const int64_t width = bit_width(qtensor.scalar_type());
  const int64_t per_byte = 8 / width;
  const float inverse_scale = scale == 0 ? 1.0f : 1.0f / scale;
  // round(round(x / scale) + zero_point): the zero point is a float here.
  auto shifted = at::round(rtensor.mul(inverse_scale)).add(zero_point);
  auto none = at::zeros({}, rtensor.options().dtype(at::kLong));
  auto values = clamp_to_range(shifted, none, low, high).reshape({-1});
  const int64_t padding = (per_byte - values.numel() % per_byte) % per_byte;
  auto grouped = at::constant_pad_nd(values, {0, padding}, 0).reshape({-1, per_byte});
  auto bytes = grouped.mul(place_values(width, rtensor)).sum(-1).to(at::kByte);
  packed_bytes_view(qtensor).copy_(bytes);
}

void dequantize_sub_byte(const at::Tensor& qtensor, at::Tensor& rtensor, float scale,
                         float zero_point) {
  OPENNEURON_NATIVE_OP("aten::dequantize.self");
  const int64_t width = bit_width(qtensor.scalar_type());
  auto bytes = packed_bytes_view(qtensor).to(at::kLong).unsqueeze(-1);
  auto values = bytes.div(place_values(width, rtensor), "floor").remainder(1LL << width);
  auto unpacked = values.reshape({-1}).narrow(0, 0, qtensor.numel()).reshape(qtensor.sizes());
  rtensor.copy_(unpacked.to(at::kFloat).sub(zero_point).mul(scale));
}

}  // namespace
}  // namespace openneuron::bridge::quantized

namespace at::native {
using namespace openneuron::bridge::quantized;
REGISTER_PRIVATEUSE1_DISPATCH(quantize_tensor_per_tensor_affine_stub, &quantize_per_tensor)
REGISTER_PRIVATEUSE1_DISPATCH(dequantize_tensor_per_tensor_affine_stub, &dequantize_per_tensor)
REGISTER_PRIVATEUSE1_DISPATCH(quantize_tensor_per_channel_affine_stub, &quantize_per_channel)
REGISTER_PRIVATEUSE1_DISPATCH(dequantize_tensor_per_channel_affine_stub, &dequantize_per_channel)
REGISTER_PRIVATEUSE1_DISPATCH(quantize_tensor_per_channel_float_qparams_stub,
                              &quantize_per_channel_float_qparams)
REGISTER_PRIVATEUSE1_DISPATCH(dequantize_tensor_per_channel_float_qparams_stub,
                              &dequantize_per_channel_float_qparams)
REGISTER_PRIVATEUSE1_DISPATCH(quantize_tensor_per_tensor_affine_sub_byte_stub, &quantize_sub_byte)
REGISTER_PRIVATEUSE1_DISPATCH(dequantize_tensor_per_tensor_affine_sub_byte_stub,
                              &dequantize_sub_byte)
}  // namespace at::native
