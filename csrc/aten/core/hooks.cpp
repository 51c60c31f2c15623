// PrivateUse1 hooks: availability, generators, pinned memory and pointer lookup.
#include <ATen/core/CachingHostAllocator.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/device_allocator.h"
#include "aten/core/generator.h"
#include "aten/core/runtime_errors.h"
#include "runtime/pinned_host_memory.h"
#include "runtime/runtime.h"

namespace openneuron::bridge {

at::HostAllocator* host_allocator();

namespace {

using runtime::Runtime;

class NeuronHooks final : public at::PrivateUse1HooksInterface {
 public:
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return Runtime::device_count_or_zero() > 0; }

  void init() const override { OPENNEURON_RUNTIME_CALL(Runtime::get()); }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return Runtime::is_initialized(); }

  c10::DeviceIndex deviceCount() const override {
    return static_cast<c10::DeviceIndex>(Runtime::device_count_or_zero());
  }
  c10::DeviceIndex getCurrentDevice() const override {
    return static_cast<c10::DeviceIndex>(runtime::current_device());
  }
  void setCurrentDevice(c10::DeviceIndex device) const override {
    OPENNEURON_RUNTIME_CALL(runtime::set_current_device(device));
  }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    const auto previous = getCurrentDevice();
    if (device != previous) setCurrentDevice(device);
    return previous;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return exchangeDevice(device);
  }

  const at::Generator& getDefaultGenerator(c10::DeviceIndex device) const override {
    return default_generator(device);
  }
  at::Generator getNewGenerator(c10::DeviceIndex device) const override {
    return new_generator(device);
  }

  at::Device getDeviceFromPtr(void* data) const override {
    auto& rt = Runtime::get();
    for (int d = 0; d < rt.device_count(); ++d) {
      if (rt.device(d).allocator().owns(data)) {
        return at::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(d));
      }
    }
    TORCH_CHECK(false, "pointer ", data, " is not neuron device memory");
  }

  bool isPinnedPtr(const void* data) const override {
    return runtime::PinnedHostMemory::instance().is_pinned(data);
  }
  at::Allocator* getPinnedMemoryAllocator() const override { return host_allocator(); }

  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t bytes) const override {
    const c10::DeviceGuard guard(storage.device());
    resize_storage_bytes(storage, bytes);
  }
};

// Registered when the extension loads, before any neuron tensor exists.
const bool g_hooks_registered = [] {
  at::RegisterPrivateUse1HooksInterface(new NeuronHooks());
  return true;
}();

}  // namespace

}  // namespace openneuron::bridge
