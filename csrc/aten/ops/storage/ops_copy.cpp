// Copies between host and device and within the device, with dtype conversion and
// broadcasting, and reading a single value back to the host.
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>

#include "aten/adaptive/adaptive_recording.h"
#include "aten/core/host_access.h"
#include "aten/core/op_tracking.h"
#include "aten/core/runtime_errors.h"
#include "aten/core/same_width_bits.h"
#include "aten/core/tensor_views.h"
#include "aten/ops/ops.h"
#include "kernels/pointwise/cast.h"
#include "runtime/copy.h"
#include "runtime/runtime.h"

namespace openneuron::bridge {

namespace {

bool is_dense_row_major(const at::Tensor& tensor) { return tensor.is_contiguous(); }

// Same dtype and shape, both row-major dense: a plain byte copy moves the data.
bool byte_copyable(const at::Tensor& src, const at::Tensor& dst) {
  return src.scalar_type() == dst.scalar_type() && src.sizes().equals(dst.sizes()) &&
         is_dense_row_major(src) && is_dense_row_major(dst);
}

bool kernel_copyable(const at::Tensor& tensor) {
  switch (tensor.scalar_type()) {
    case at::kComplexFloat:
    case at::kComplexDouble:
    case at::kComplexHalf:
    case at::kQInt8:
    case at::kQUInt8:
    case at::kQInt32:
      return false;
    default:
      return tensor.scalar_type() == at::kDouble || is_native_compute_dtype(tensor.scalar_type()) ||
             tensor.scalar_type() == at::kFloat8_e4m3fn || tensor.scalar_type() == at::kFloat8_e5m2;
  }
}

bool is_integral_or_bool(const at::Tensor& tensor) {
  return at::isIntegralType(tensor.scalar_type(), /*includeBool=*/true);
}

bool has_math_bits(const at::Tensor& tensor) { return tensor.is_conj() || tensor.is_neg(); }

// Copies involving lazily conjugated or negated views: PyTorch's CPU copy resolves the bits.
void copy_resolving_math_bits(const at::Tensor& src, const at::Tensor& dst) {
  for (const at::Tensor* tensor : {&src, &dst}) {
    if (tensor->is_privateuseone()) {
      const c10::DeviceGuard guard(tensor->device());
      OPENNEURON_RUNTIME_CALL(stream_for(*tensor).synchronize());
    }
  }
  host_alias(dst).copy_(host_alias(src));
}

// dst (device) = src (device, same device), converting dtype and broadcasting, in stream order.
void copy_on_device(const at::Tensor& src, const at::Tensor& dst) {
  auto& stream = stream_for(dst);
  if (src.scalar_type() == dst.scalar_type() && (!kernel_copyable(src) || !kernel_copyable(dst))) {
    // Same format on both sides: the bits move unchanged, whatever the format computes in.
    const at::Tensor src_bits = same_width_bits(src);
    if (src_bits.defined()) {
      copy_on_device(src_bits, same_width_bits(dst));
      return;
    }
  }
  if (is_wide_unsigned(src.scalar_type()) && kernel_copyable(dst) && !dst.is_alias_of(src)) {
    // uint16/32/64 values converted on the device (the kernels read their bits as unsigned).
    const kernels::TensorView dst_view = view_of(dst);
    const kernels::TensorView src_view = broadcast_view(same_width_bits(src), dst.sizes());
    stream.enqueue("aten::copy_",
                   [dst_view, src_view] { kernels::copy_from_unsigned(dst_view, src_view); });
    return;
  }
  if (is_wide_unsigned(dst.scalar_type()) && is_integral_or_bool(src) && kernel_copyable(src)) {
    // Integers reach an unsigned type by wrapping, which leaves the bits a signed type of the
    // same width would hold.
    copy_on_device(src, same_width_bits(dst));
    return;
  }
  if (!kernel_copyable(src) || !kernel_copyable(dst)) {
    OPENNEURON_RUNTIME_CALL(stream.synchronize());
    host_alias(dst).copy_(host_alias(src));
    return;
  }
  at::Tensor source = src;
  if (dst.is_alias_of(src) && !dst.is_same(src)) {
    // Overlapping views: read everything before writing anything.
    source = at::empty(src.sizes(), src.options());
    copy_on_device(src, source);
  }
  const kernels::TensorView dst_view = view_of(dst);
  const kernels::TensorView src_view = broadcast_view(source, dst.sizes());
  // Dtype conversions join adaptive eager's segments (autocast's casts sit between pointwise ops).
  if (src.scalar_type() != dst.scalar_type() && dst.numel() > 0 &&
      record_adaptive_cast(stream, dst_view, src_view)) {
    return;
  }
  stream.enqueue("aten::copy_", [dst_view, src_view] { kernels::copy(dst_view, src_view); });
}

void copy_host_to_device(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  auto& stream = stream_for(dst);
  if (byte_copyable(src, dst)) {
    OPENNEURON_RUNTIME_CALL(runtime::copy_host_to_device(
        stream, dst.data_ptr(), src.const_data_ptr(), dst.nbytes(), non_blocking));
    return;
  }
  // Convert and lay out on the host, then move the bytes in one copy.
  at::Tensor staged = src.to(dst.scalar_type()).expand(dst.sizes()).contiguous();
  if (is_dense_row_major(dst)) {
    OPENNEURON_RUNTIME_CALL(runtime::copy_host_to_device(
        stream, dst.data_ptr(), staged.const_data_ptr(), dst.nbytes(), /*non_blocking=*/false));
    return;
  }
  at::Tensor dense = at::empty(dst.sizes(), dst.options());
  OPENNEURON_RUNTIME_CALL(runtime::copy_host_to_device(
      stream, dense.data_ptr(), staged.const_data_ptr(), dense.nbytes(), /*non_blocking=*/false));
  copy_on_device(dense, dst);
}

void copy_device_to_host(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  auto& stream = stream_for(src);
  if (byte_copyable(src, dst)) {
    OPENNEURON_RUNTIME_CALL(runtime::copy_device_to_host(
        stream, dst.data_ptr(), src.const_data_ptr(), dst.nbytes(), non_blocking));
    return;
  }
  // Convert and lay out on the device, then move the bytes in one copy.
  at::Tensor dense = at::empty(dst.sizes(), src.options().dtype(dst.scalar_type()));
  copy_on_device(src, dense);
  if (is_dense_row_major(dst)) {
    OPENNEURON_RUNTIME_CALL(runtime::copy_device_to_host(
        stream, dst.data_ptr(), dense.const_data_ptr(), dst.nbytes(), /*non_blocking=*/false));
    return;
  }
  at::Tensor host =
      at::empty(dst.sizes(), dst.options().memory_format(at::MemoryFormat::Contiguous));
  OPENNEURON_RUNTIME_CALL(runtime::copy_device_to_host(
      stream, host.data_ptr(), dense.const_data_ptr(), host.nbytes(), /*non_blocking=*/false));
  dst.copy_(host);
}

void copy_between_devices(const at::Tensor& src, const at::Tensor& dst) {
  // Convert on the source device, move bytes across, lay out on the destination device.
  at::Tensor dense_src;
  {
    const c10::DeviceGuard guard(src.device());
    dense_src = at::empty(dst.sizes(), src.options().dtype(dst.scalar_type()));
    copy_on_device(src, dense_src);
  }
  const c10::DeviceGuard guard(dst.device());
  at::Tensor dense_dst = is_dense_row_major(dst) ? dst : at::empty(dst.sizes(), dst.options());
  OPENNEURON_RUNTIME_CALL(runtime::copy_device_to_device(
      stream_for(dense_dst), dense_dst.data_ptr(), stream_for(dense_src),
      dense_src.const_data_ptr(), dense_dst.nbytes()));
  if (!dense_dst.is_same(dst)) copy_on_device(dense_dst, dst);
}

}  // namespace

namespace {

// The copy itself, without copy_'s checks of shape and overlap: the host fallback hands a
// result back through it into the very tensor the CPU wrote (an expanded out=self included).
at::Tensor copy_unchecked(const at::Tensor& self, const at::Tensor& dst, bool non_blocking);

}  // namespace

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  OPENNEURON_NATIVE_OP("aten::_copy_from");
  TORCH_CHECK(self.defined() && dst.defined(), "copy_: both tensors must be defined");
  if (self.is_same(dst)) return dst;
  // As TensorIterator's copy_: the source broadcasts to the destination's shape.
  if (!self.sizes().equals(dst.sizes())) {
    const at::DimVector shape = at::infer_size_dimvector(dst.sizes(), self.sizes());
    TORCH_CHECK(dst.sizes().equals(shape), "output with shape ", dst.sizes(),
                " doesn't match the broadcast shape ", c10::IntArrayRef(shape));
  }
  if (dst.numel() == 0) return dst;
  // As TensorIterator's copy_: a destination holding one location twice, or partly sharing the
  // source's memory, would be written in an undefined order.
  if (dst.is_privateuseone()) at::assert_no_internal_overlap(dst);
  if (dst.is_privateuseone() && self.is_privateuseone()) at::assert_no_partial_overlap(dst, self);
  return copy_unchecked(self, dst, non_blocking);
}

namespace {

at::Tensor copy_unchecked(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  if (dst.numel() == 0 || self.is_same(dst)) return dst;
  const bool src_on_device = self.is_privateuseone();
  const bool dst_on_device = dst.is_privateuseone();
  if (has_math_bits(self) || has_math_bits(dst)) {
    copy_resolving_math_bits(self, dst);
    return dst;
  }
  TORCH_CHECK(src_on_device || self.is_cpu(), "copy_: cannot copy from ", self.device(), " to ",
              dst.device());
  TORCH_CHECK(dst_on_device || dst.is_cpu(), "copy_: cannot copy from ", self.device(), " to ",
              dst.device());
  if (src_on_device && dst_on_device) {
    if (self.device() == dst.device()) {
      const c10::DeviceGuard guard(dst.device());
      copy_on_device(self, dst);
    } else {
      copy_between_devices(self, dst);
    }
  } else if (dst_on_device) {
    const c10::DeviceGuard guard(dst.device());
    copy_host_to_device(self, dst, non_blocking);
  } else {
    const c10::DeviceGuard guard(self.device());
    copy_device_to_host(self, dst, non_blocking);
  }
  return dst;
}

}  // namespace

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  OPENNEURON_NATIVE_OP("aten::_copy_from_and_resize");
  if (!dst.sizes().equals(self.sizes())) {
    // The host fallback hands back an out= result this way: a resized output takes the CPU
    // result's layout (e.g. the inputs' transposed one), as the CPU's own out= resize does.
    dst.resize_(self.sizes());
    if (self.is_non_overlapping_and_dense()) dst.as_strided_(self.sizes(), self.strides());
  }
  return copy_unchecked(self, dst, /*non_blocking=*/false);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  OPENNEURON_NATIVE_OP("aten::_local_scalar_dense");
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(),
              " elements cannot be converted to Scalar");
  const c10::DeviceGuard guard(self.device());
  at::Tensor host = at::empty({}, self.options().device(at::kCPU));
  OPENNEURON_RUNTIME_CALL(runtime::copy_device_to_host(stream_for(self), host.data_ptr(),
                                                       self.const_data_ptr(), self.element_size(),
                                                       /*non_blocking=*/false));
  return host.item();
}

}  // namespace openneuron::bridge
