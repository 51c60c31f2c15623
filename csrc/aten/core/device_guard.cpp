// The device guard: current device and stream, streams from the pool, and events, as
// c10 sees them (torch.accelerator, torch.Stream, torch.Event, DeviceGuard).
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "aten/core/device_allocator.h"
#include "aten/core/runtime_errors.h"
#include "runtime/event.h"
#include "runtime/runtime.h"

namespace openneuron::bridge {

namespace {

using runtime::Runtime;

constexpr c10::DeviceType kNeuron = c10::DeviceType::PrivateUse1;

c10::Stream to_c10(const runtime::Stream& stream) {
  return c10::Stream(c10::Stream::UNSAFE,
                     c10::Device(kNeuron, static_cast<c10::DeviceIndex>(stream.device())),
                     stream.id());
}

runtime::Stream& to_runtime(const c10::Stream& stream) {
  runtime::Stream* result = nullptr;
  OPENNEURON_RUNTIME_CALL(result =
                              &Runtime::get().device(stream.device_index()).stream(stream.id()));
  return *result;
}

int index_or_current(c10::DeviceIndex index) {
  return index < 0 ? runtime::current_device() : index;
}

class NeuronGuardImpl final : public c10::impl::DeviceGuardImplInterface {
 public:
  c10::DeviceType type() const override { return kNeuron; }

  c10::Device exchangeDevice(c10::Device device) const override {
    const c10::Device previous = getDevice();
    if (device.index() != previous.index()) setDevice(device);
    return previous;
  }

  c10::Device getDevice() const override {
    return c10::Device(kNeuron, static_cast<c10::DeviceIndex>(runtime::current_device()));
  }

  void setDevice(c10::Device device) const override {
    TORCH_CHECK(device.type() == kNeuron, "expected a neuron device, got ", device);
    OPENNEURON_RUNTIME_CALL(runtime::set_current_device(index_or_current(device.index())));
  }

  void uncheckedSetDevice(c10::Device device) const noexcept override {
    // Every guard restores its device on exit, mostly the one still current: skip the check.
    if (device.has_index() && device.index() == runtime::current_device()) return;
    try {
      runtime::set_current_device(index_or_current(device.index()));
    } catch (...) {
      // Restoring a device that was valid before cannot fail; nothing else calls this.
    }
  }

  c10::Stream getStream(c10::Device device) const override {
    runtime::Stream* stream = nullptr;
    OPENNEURON_RUNTIME_CALL(stream = &runtime::current_stream(index_or_current(device.index())));
    return to_c10(*stream);
  }

  c10::Stream getDefaultStream(c10::Device device) const override {
    runtime::Stream* stream = nullptr;
    OPENNEURON_RUNTIME_CALL(
        stream = &Runtime::get().device(index_or_current(device.index())).default_stream());
    return to_c10(*stream);
  }

  c10::Stream getStreamFromGlobalPool(c10::Device device, bool) const override {
    runtime::Stream* stream = nullptr;
    OPENNEURON_RUNTIME_CALL(
        stream = &Runtime::get().device(index_or_current(device.index())).next_pool_stream());
    return to_c10(*stream);
  }

  c10::Stream getNewStream(c10::Device device, int) const override {
    return getStreamFromGlobalPool(device, false);
  }

  c10::Stream exchangeStream(c10::Stream stream) const override {
    runtime::Stream& target = to_runtime(stream);
    runtime::Stream* previous = nullptr;
    OPENNEURON_RUNTIME_CALL(previous = &runtime::current_stream(target.device()));
    runtime::set_current_stream(target);
    return to_c10(*previous);
  }

  c10::DeviceIndex deviceCount() const noexcept override {
    return static_cast<c10::DeviceIndex>(Runtime::device_count_or_zero());
  }

  // torch.accelerator.get_device_capability: the dtypes a neuron tensor can hold and convert
  // between. Every device has the same set: all but the bit-packed, sub-byte integer and packed
  // fp4 types, which have no neuron kernels or conversions (nor CPU conversions). Quantized
  // dtypes are held as quantized tensors (quantize_per_tensor/per_channel, dequantize).
  c10::DeviceCapability getDeviceCapability(c10::Device device) const override {
    OPENNEURON_RUNTIME_CALL(Runtime::get().device(index_or_current(device.index())));
    c10::DeviceCapability capability;  // starts with every dtype
    auto& supports = capability.capability_data.supported_scalar_types;
    supports.has_Bits1x8 = supports.has_Bits2x4 = supports.has_Bits4x2 = 0;
    supports.has_Bits8 = supports.has_Bits16 = 0;
    supports.has_Float4_e2m1fn_x2 = 0;
    supports.has_UInt1 = supports.has_UInt2 = supports.has_UInt3 = supports.has_UInt4 = 0;
    supports.has_UInt5 = supports.has_UInt6 = supports.has_UInt7 = 0;
    supports.has_Int1 = supports.has_Int2 = supports.has_Int3 = supports.has_Int4 = 0;
    supports.has_Int5 = supports.has_Int6 = supports.has_Int7 = 0;
    return capability;
  }

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(), "event device index ",
                device_index, " does not match the stream's device ", stream.device_index());
    if (*event == nullptr) {
      *event = new runtime::Event(/*enable_timing=*/flag == c10::EventFlag::BACKEND_DEFAULT);
    }
    auto* neuron_event = static_cast<runtime::Event*>(*event);
    OPENNEURON_RUNTIME_CALL(neuron_event->record(to_runtime(stream)));
  }

  void block(void* event, const c10::Stream& stream) const override {
    if (!event) return;
    OPENNEURON_RUNTIME_CALL(static_cast<runtime::Event*>(event)->block(to_runtime(stream)));
  }

  bool queryEvent(void* event) const override {
    return !event || static_cast<runtime::Event*>(event)->query();
  }

  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    delete static_cast<runtime::Event*>(event);
  }

  void synchronizeEvent(void* event) const override {
    if (event) static_cast<runtime::Event*>(event)->synchronize();
  }

  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    TORCH_CHECK(start && end, "elapsed_time needs both events to have been recorded");
    double ms = 0;
    OPENNEURON_RUNTIME_CALL(
        ms = static_cast<runtime::Event*>(start)->elapsed_ms(*static_cast<runtime::Event*>(end)));
    return ms;
  }

  bool queryStream(const c10::Stream& stream) const override { return to_runtime(stream).query(); }

  void synchronizeStream(const c10::Stream& stream) const override {
    OPENNEURON_RUNTIME_CALL(to_runtime(stream).synchronize());
  }

  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    OPENNEURON_RUNTIME_CALL(Runtime::get().device(index_or_current(device_index)).synchronize());
  }

  void recordDataPtrOnStream(const c10::DataPtr& data, const c10::Stream& stream) const override {
    device_allocator()->recordStream(data, stream);
  }
};

}  // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, NeuronGuardImpl);

}  // namespace openneuron::bridge
