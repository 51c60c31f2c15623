// torch's storage-less zero tensors (the ZeroTensor key, which autograd uses for gradients that
// are known to be zero, e.g. sgn's of a real input): no device memory, the neuron device's
// dispatch key beside ZeroTensor, as CUDA's factory makes them.
#include <ATen/EmptyTensor.h>
#include <c10/core/Allocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include "aten/core/op_tracking.h"

namespace openneuron::bridge {
namespace {

// Hands out null data pointers on one device: a ZeroTensor's storage is never read.
struct NoStorageAllocator final : c10::Allocator {
  explicit NoStorageAllocator(c10::Device device) : device(device) {}
  c10::DataPtr allocate(size_t) override { return {nullptr, nullptr, &release, device}; }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void*, const void*, std::size_t) const override {}
  static void release(void*) {}
  c10::Device device;
};

at::Tensor efficient_zero_tensor(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                                 std::optional<at::Layout> layout, std::optional<at::Device> device,
                                 std::optional<bool> pin_memory) {
  OPENNEURON_NATIVE_OP("aten::_efficientzerotensor");
  c10::Device target = device.value_or(c10::Device(c10::DeviceType::PrivateUse1));
  if (!target.has_index()) {
    target.set_index(
        c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1)->getDevice().index());
  }
  NoStorageAllocator allocator(target);
  const c10::DispatchKeySet keys = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1) |
                                   c10::DispatchKeySet(c10::DispatchKey::ZeroTensor);
  return at::detail::empty_generic(
      size, &allocator, keys, dtype.value_or(c10::get_default_dtype_as_scalartype()), std::nullopt);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_efficientzerotensor", TORCH_FN(efficient_zero_tensor));
}

}  // namespace openneuron::bridge
