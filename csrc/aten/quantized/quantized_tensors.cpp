// Quantized tensors on the device (dispatch key QuantizedPrivateUse1): creation with PyTorch's
// quantizers and the device allocator, views, copies between devices, int_repr, equality and
// the quantizer's parameters, flip; and quantize_per_tensor/per_channel of a device tensor. The
// arithmetic is in affine_quantizer_kernels.cpp; other quantized ops are not provided (as on
// CUDA, they raise NotImplementedError naming QuantizedPrivateUse1's device).
#include <ATen/Tensor.h>
#include <ATen/ops/_empty_affine_quantized_native.h>
#include <ATen/ops/_empty_per_channel_affine_quantized_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/dequantize_native.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_native.h>
#include <ATen/ops/empty_quantized.h>
#include <ATen/ops/empty_quantized_native.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/flip.h>
#include <ATen/ops/q_per_channel_axis_native.h>
#include <ATen/ops/q_per_channel_scales_native.h>
#include <ATen/ops/q_per_channel_zero_points_native.h>
#include <ATen/ops/q_scale_native.h>
#include <ATen/ops/q_zero_point_native.h>
#include <ATen/ops/qscheme_native.h>
#include <ATen/ops/quantize_per_channel_native.h>
#include <ATen/ops/quantize_per_tensor_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/quantized/Quantizer.h>
#include <torch/library.h>

#include "aten/core/op_tracking.h"
#include "aten/quantized/quantized_views.h"

namespace openneuron::bridge::quantized {
namespace {

// The quantizer of `qtensor` for a tensor on `device`: per-channel parameters are moved there
// (a host copy of a device tensor, or the reverse, must not keep the other device's scales).
at::QuantizerPtr quantizer_on(const at::Tensor& qtensor, c10::Device device) {
  const auto scheme = qtensor.qscheme();
  if (scheme != at::kPerChannelAffine && scheme != at::kPerChannelAffineFloatQParams) {
    return qtensor.quantizer();
  }
  return at::make_per_channel_affine_quantizer(qtensor.q_per_channel_scales().to(device),
                                               qtensor.q_per_channel_zero_points().to(device),
                                               qtensor.q_per_channel_axis(), qtensor.scalar_type());
}

// empty_quantized (the allocation of .to() and empty_like): PyTorch's, with the parameters on
// the new tensor's device.
at::Tensor empty_quantized(at::IntArrayRef size, const at::Tensor& qtensor,
                           std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                           std::optional<c10::Device> device, std::optional<bool> pin_memory,
                           std::optional<c10::MemoryFormat> memory_format) {
  auto out =
      at::native::empty_quantized(size, qtensor, dtype, layout, device, pin_memory, memory_format);
  at::set_quantizer_(out, quantizer_on(qtensor, out.device()));
  return out;
}

// _copy_from with a quantized tensor on either side, one of them on the device (copy_ hands
// such copies to _copy_from before its own quantized checks, so they are made here, as the
// CPU makes them): quantized -> quantized copies the stored integers with the device's copy
// and gives the destination the source's quantizer; float -> quantized quantizes with the
// destination's quantizer; quantized -> non-quantized is refused.
at::Tensor copy_quantized(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  OPENNEURON_NATIVE_OP("aten::_copy_from");
  TORCH_CHECK(dst.is_quantized(),
              "Copying from quantized Tensor to non-quantized Tensor is not allowed, please use "
              "dequantize to get a float Tensor from a quantized Tensor");
  TORCH_CHECK(dst.sizes() == src.sizes(), "quantized copy needs tensors of the same shape, got ",
              src.sizes(), " into ", dst.sizes());
  if (!src.is_quantized()) {
    auto quantized = dst.quantizer()->quantize(src.to(dst.device()));
    return copy_quantized(quantized, dst, non_blocking);
  }
  TORCH_CHECK(dst.qscheme() == src.qscheme(), "Quantized Copy only works with same qscheme");
  TORCH_CHECK(dst.scalar_type() == src.scalar_type(), "quantized copy from ", src.scalar_type(),
              " to ", dst.scalar_type(), ": the dtypes must match");
  at::set_quantizer_(dst, quantizer_on(src, dst.device()));
  if (is_sub_byte(src.scalar_type())) {
    packed_bytes_view(dst).copy_(packed_bytes_view(src), non_blocking);
  } else {
    integer_view(dst).copy_(integer_view(src), non_blocking);
  }
  return dst;
}

// The stored integers as a new plain tensor (bit-packed dtypes: the packed bytes, 1-D).
at::Tensor int_repr(const at::Tensor& self) {
  OPENNEURON_NATIVE_OP("aten::int_repr");
  if (is_sub_byte(self.scalar_type())) {
    return packed_bytes_view(self).clone();
  }
  auto out = at::empty(self.sizes(), self.options().dtype(stored_integer_type(self.scalar_type())),
                       self.suggest_memory_format());
  return out.copy_(integer_view(self));
}

// Reversed along `dims`: the stored integers flipped, the quantizer kept.
at::Tensor flip_quantized(const at::Tensor& self, at::IntArrayRef dims) {
  OPENNEURON_NATIVE_OP("aten::flip");
  TORCH_CHECK_NOT_IMPLEMENTED(!is_sub_byte(self.scalar_type()), "flip of a bit-packed ",
                              self.scalar_type(), " tensor is not supported");
  auto out = at::empty_quantized(self.sizes(), self);
  integer_view(out).copy_(at::flip(integer_view(self), dims));
  return out;
}

// Same quantizer (scheme, dtype and parameters), sizes and stored integers.
bool equal_quantized(const at::Tensor& self, const at::Tensor& other) {
  if (!other.is_quantized() || self.sizes() != other.sizes() ||
      !self.quantizer()->equalTo(other.quantizer())) {
    return false;
  }
  if (is_sub_byte(self.scalar_type())) {
    return at::eq(packed_bytes_view(self), packed_bytes_view(other.to(self.device())))
        .all()
        .item<bool>();
  }
  return at::eq(integer_view(self), integer_view(other.to(self.device()))).all().item<bool>();
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, QuantizedPrivateUse1, m) {
  // Creation: PyTorch's quantized factories allocate with the device's allocator.
  m.impl("empty_quantized", TORCH_FN(empty_quantized));
  m.impl("_empty_affine_quantized", TORCH_FN(at::native::empty_affine_quantized));
  m.impl("_empty_per_channel_affine_quantized",
         TORCH_FN(at::native::empty_per_channel_affine_quantized));
  m.impl("empty.memory_format", TORCH_FN(at::native::empty_unknown_quantized));
  // Views keep the quantizer.
  m.impl("as_strided", TORCH_FN(at::native::as_strided_qtensorimpl));
  m.impl("view", TORCH_FN(at::native::view));
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(at::native::set_storage_quantized_));
  // Copies and values.
  m.impl("_copy_from", TORCH_FN(copy_quantized));
  m.impl("clone", TORCH_FN(at::native::quantized_clone));
  m.impl("int_repr", TORCH_FN(int_repr));
  m.impl("dequantize.self", TORCH_FN(at::native::dequantize_quantized));
  m.impl("equal", TORCH_FN(equal_quantized));
  m.impl("flip", TORCH_FN(flip_quantized));
  // The quantizer's parameters.
  m.impl("qscheme", TORCH_FN(at::native::qscheme_quant));
  m.impl("q_scale", TORCH_FN(at::native::q_scale_quant));
  m.impl("q_zero_point", TORCH_FN(at::native::q_zero_point_quant));
  m.impl("q_per_channel_scales", TORCH_FN(at::native::q_per_channel_scales));
  m.impl("q_per_channel_zero_points", TORCH_FN(at::native::q_per_channel_zero_points));
  m.impl("q_per_channel_axis", TORCH_FN(at::native::q_per_channel_axis));
}

// Quantizing a device tensor: PyTorch's quantizers, whose kernels are the device's.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("quantize_per_tensor", TORCH_FN(at::native::quantize_per_tensor));
  m.impl("quantize_per_tensor.tensor_qparams",
         TORCH_FN(at::native::quantize_per_tensor_tensor_qparams));
  m.impl("quantize_per_channel", TORCH_FN(at::native::quantize_per_channel));
}

}  // namespace openneuron::bridge::quantized
