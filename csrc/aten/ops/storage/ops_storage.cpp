// Tensor creation, storage and view ops: the minimum a PrivateUse1 device provides.
#include <ATen/Context.h>
#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>
#include <ATen/native/ResizeCommon.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/is_set_to_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/device_allocator.h"
#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/runtime_errors.h"
#include "aten/core/tensor_views.h"
#include "aten/ops/ops.h"
#include "runtime/copy.h"
#include "runtime/runtime.h"

namespace openneuron::bridge {

namespace {

constexpr c10::DispatchKeySet kNeuronKeys(c10::DispatchKey::PrivateUse1);

void check_factory_options(std::optional<c10::Layout> layout, std::optional<bool> pin_memory) {
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
              "neuron tensors support only the strided layout, got ",
              c10::layout_or_default(layout));
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory),
              "pin_memory applies to CPU tensors only, not to neuron tensors");
}

// Grows the tensor's storage when its sizes, strides and offset reach past the end.
void ensure_storage_fits(const at::Tensor& self) {
  auto* impl = self.unsafeGetTensorImpl();
  if (impl->numel() == 0) return;
  const size_t needed = at::detail::computeStorageNbytes(
      impl->sizes(), impl->strides(), self.dtype().itemsize(), impl->storage_offset());
  const c10::Storage& storage = impl->unsafe_storage();
  if (needed <= storage.nbytes()) return;
  TORCH_CHECK(storage.resizable(), "cannot resize a neuron tensor whose storage is not resizable");
  const c10::DeviceGuard guard(self.device());
  resize_storage_bytes(storage, needed);
}

bool fills_uninitialized_memory() {
  const auto& context = at::globalContext();
  return context.deterministicAlgorithms() && context.deterministicFillUninitializedMemory();
}

// Under torch.use_deterministic_algorithms(True) with fill_uninitialized_memory (its default),
// new memory holds NaN (floating, complex) or the dtype's largest value, as on the CPU.
at::Tensor filled_if_deterministic(at::Tensor tensor) {
  if (fills_uninitialized_memory()) at::native::fill_empty_deterministic_(tensor);
  return tensor;
}

}  // namespace

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pin_memory,
                               std::optional<c10::MemoryFormat> memory_format) {
  OPENNEURON_NATIVE_OP("aten::empty.memory_format");
  check_factory_options(layout, pin_memory);
  const c10::DeviceGuard guard(c10::device_or_default(device));
  return filled_if_deterministic(at::detail::empty_generic(
      size, device_allocator(), kNeuronKeys, c10::dtype_or_default(dtype), memory_format));
}

at::Tensor empty_device_tensor(at::IntArrayRef shape, at::OptionalIntArrayRef strides,
                               at::ScalarType dtype, c10::Device device) {
  // The allocator serves the current device: switch only when the output lives elsewhere.
  std::optional<c10::DeviceGuard> guard;
  if (!device.has_index() || device.index() != runtime::current_device()) guard.emplace(device);
  if (strides.has_value()) {
    return filled_if_deterministic(
        at::detail::empty_strided_generic(shape, *strides, device_allocator(), kNeuronKeys, dtype));
  }
  return filled_if_deterministic(
      at::detail::empty_generic(shape, device_allocator(), kNeuronKeys, dtype, std::nullopt));
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                         std::optional<c10::Device> device, std::optional<bool> pin_memory) {
  OPENNEURON_NATIVE_OP("aten::empty_strided");
  check_factory_options(layout, pin_memory);
  const c10::DeviceGuard guard(c10::device_or_default(device));
  return filled_if_deterministic(at::detail::empty_strided_generic(
      size, stride, device_allocator(), kNeuronKeys, c10::dtype_or_default(dtype)));
}

at::Tensor as_strided(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride,
                      std::optional<int64_t> storage_offset) {
  OPENNEURON_NATIVE_OP("aten::as_strided");
  return at::native::as_strided_tensorimpl(self, size, stride, storage_offset);
}

at::Tensor view(const at::Tensor& self, c10::IntArrayRef size) {
  OPENNEURON_NATIVE_OP("aten::view");
  return at::native::view(self, size);
}

at::Tensor reshape_alias(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride) {
  OPENNEURON_NATIVE_OP("aten::_reshape_alias");
  return at::native::_reshape_alias(self, size, stride);
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format) {
  OPENNEURON_NATIVE_OP("aten::resize_");
  auto* impl = self.unsafeGetTensorImpl();
  const auto old_storage_nbytes = static_cast<int64_t>(impl->unsafe_storage().nbytes());
  at::native::resize_impl_cpu_(impl, size, /*stride=*/std::nullopt, /*resize_storage=*/false);
  if (memory_format.has_value() && *memory_format != c10::MemoryFormat::Preserve) {
    impl->empty_tensor_restride(*memory_format);
  }
  ensure_storage_fits(self);
  // The bytes a grown storage added, as the CPU's resize_ fills them (see empty above).
  if (fills_uninitialized_memory())
    at::native::fill_resize_deterministic_(self, old_storage_nbytes);
  return self;
}

at::Tensor& set_source_storage_offset(at::Tensor& self, c10::Storage source, int64_t storage_offset,
                                      c10::IntArrayRef size, c10::IntArrayRef stride) {
  OPENNEURON_NATIVE_OP("aten::set_.source_Storage_storage_offset");
  at::native::checkSetStorage(self, source, storage_offset, size, stride);
  self.unsafeGetTensorImpl()->set_storage_offset(storage_offset);
  at::OptionalIntArrayRef stride_opt =
      stride.data() != nullptr ? at::OptionalIntArrayRef(stride) : std::nullopt;
  at::native::resize_impl_cpu_(self.unsafeGetTensorImpl(), size, stride_opt,
                               /*resize_storage=*/false);
  ensure_storage_fits(self);
  return self;
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source) {
  OPENNEURON_NATIVE_OP("aten::set_.source_Storage");
  const int64_t elements = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return set_source_storage_offset(self, std::move(source), 0, {elements}, {});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  OPENNEURON_NATIVE_OP("aten::set_.source_Tensor");
  if (self.is_same(source)) return self;
  return set_source_storage_offset(self, source.storage(), source.storage_offset(), source.sizes(),
                                   source.strides());
}

// Whether self views exactly src's memory (one storage, offset, sizes and strides). Metadata
// only: on the host fallback it compared two copies, which never share a storage.
bool is_set_to(const at::Tensor& self, const at::Tensor& src) {
  OPENNEURON_NATIVE_OP("aten::is_set_to");
  return at::native::is_set_to(self, src);
}

at::Tensor& set_empty(at::Tensor& self) {
  OPENNEURON_NATIVE_OP("aten::set_");
  c10::Storage empty_storage(c10::Storage::use_byte_size_t(), 0, device_allocator(),
                             /*resizable=*/true);
  return set_source_storage_offset(self, std::move(empty_storage), 0, {0}, {});
}

void record_stream(at::Tensor& self, c10::Stream stream) {
  OPENNEURON_NATIVE_OP("aten::record_stream");
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1,
              "record_stream: expected a neuron stream, got one on ", stream.device());
  device_allocator()->recordStream(self.storage().data_ptr(), stream);
}

// Lets `param.data = neuron_tensor` (what Module.to() does) keep the Parameter object, so
// weights tied across modules stay tied, as they do on CUDA. PyTorch's built-in rule
// knows only its own dense backends.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  const auto plain_dense = [](const at::Tensor& tensor) {
    return (tensor.is_cpu() || tensor.is_privateuseone()) && tensor.layout() == c10::kStrided &&
           !tensor.is_quantized() && !tensor.is_nested() &&
           typeid(*tensor.unsafeGetTensorImpl()) == typeid(c10::TensorImpl);
  };
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set()) ||
         (plain_dense(self) && plain_dense(from));
}

}  // namespace openneuron::bridge
