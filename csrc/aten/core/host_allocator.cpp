// Pinned host memory for neuron copies: `tensor.pin_memory()`, DataLoader(pin_memory=True)
// and non_blocking copies use it.
#include <ATen/core/CachingHostAllocator.h>

#include "aten/core/runtime_errors.h"
#include "runtime/pinned_host_memory.h"
#include "runtime/runtime.h"

namespace openneuron::bridge {

namespace {

using runtime::PinnedHostMemory;

void free_pinned(void* ptr) { PinnedHostMemory::instance().free(ptr); }

class NeuronHostAllocator final : public at::HostAllocator {
 public:
  c10::DataPtr allocate(size_t bytes) override {
    void* ptr = PinnedHostMemory::instance().allocate(bytes);
    return c10::DataPtr(ptr, ptr, &free_pinned, c10::Device(c10::DeviceType::CPU));
  }

  c10::DeleterFnPtr raw_deleter() const override { return &free_pinned; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }

  bool record_event(void* ptr, void*, c10::Stream stream) override {
    OPENNEURON_RUNTIME_CALL(PinnedHostMemory::instance().record_use(
        ptr, runtime::Runtime::get().device(stream.device_index()).stream(stream.id())));
    return true;
  }

  void empty_cache() override {}  // nothing is cached: freed buffers return to the host

  at::HostStats get_stats() override { return at::HostStats{}; }
  void reset_accumulated_stats() override {}
  void reset_peak_stats() override {}
};

NeuronHostAllocator g_host_allocator;

}  // namespace

at::HostAllocator* host_allocator() { return &g_host_allocator; }

}  // namespace openneuron::bridge

REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, &openneuron::bridge::g_host_allocator)
