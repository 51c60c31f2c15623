#include "aten/core/device_allocator.h"

#include <algorithm>
#include <cstring>

#include "aten/core/memory_history.h"
#include "aten/core/runtime_errors.h"
#include "runtime/copy.h"
#include "runtime/errors.h"
#include "runtime/runtime.h"

namespace openneuron::bridge {

namespace {

using runtime::Runtime;

// torch.profiler's memory events (profile_memory=True): the change and the device's totals.
void report_to_profiler(runtime::CachingAllocator& allocator, void* ptr, int64_t delta,
                        int device) {
  const runtime::MemoryStats stats = allocator.stats();
  c10::reportMemoryUsageToProfiler(
      ptr, delta, static_cast<size_t>(stats.allocated_bytes[0].current),
      static_cast<size_t>(stats.reserved_bytes[0].current),
      c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device)));
}

// DataPtrs carry the data pointer as their context (a "simple" DataPtr, as CUDA's allocator
// makes), which copy-on-write lazy clones require; the deleter gets only that pointer, so it
// offers it to each device's allocator, the one that last freed on this thread first.
void free_device_memory(void* ptr) {
  if (!ptr || !Runtime::is_initialized()) return;
  thread_local int last_device = 0;
  try {
    auto& rt = Runtime::get();
    const int count = rt.device_count();
    for (int i = 0; i < count; ++i) {
      const int device = (last_device + i) % count;
      auto& allocator = rt.device(device).allocator();
      runtime::CachingAllocator::Freed freed;
      if (!allocator.release(ptr, &freed)) continue;
      last_device = device;
      if (memory_history_enabled()) {
        memory_history_on_free(device, ptr, freed.requested, freed.stream);
      }
      if (c10::memoryProfilingEnabled()) {
        report_to_profiler(allocator, ptr, -static_cast<int64_t>(freed.requested), device);
      }
      return;
    }
  } catch (const ::openneuron::runtime::Error&) {
    // In a forked child the runtime is gone; its memory went with the parent's threads.
  }
}

c10::CachingAllocator::StatArray to_c10(const runtime::StatArray& stats) {
  c10::CachingAllocator::StatArray result;
  for (size_t i = 0; i < stats.size(); ++i) {
    result[i].current = stats[i].current;
    result[i].peak = stats[i].peak;
    result[i].allocated = stats[i].allocated;
    result[i].freed = stats[i].freed;
  }
  return result;
}

runtime::CachingAllocator& allocator_of(c10::DeviceIndex device) {
  runtime::CachingAllocator* allocator = nullptr;
  OPENNEURON_RUNTIME_CALL(allocator = &Runtime::get().device(device).allocator());
  return *allocator;
}

class NeuronDeviceAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t bytes) override {
    int device = 0;
    void* ptr = nullptr;
    int64_t stream = 0;
    OPENNEURON_RUNTIME_CALL({
      device = runtime::current_device();
      auto& target = Runtime::get().device(device);
      auto& current = runtime::current_stream(device);
      stream = current.id();
      ptr = target.allocator().allocate(bytes, current);
      if (ptr && memory_history_enabled()) memory_history_on_alloc(device, ptr, bytes, stream);
      if (ptr && c10::memoryProfilingEnabled()) {
        report_to_profiler(target.allocator(), ptr, static_cast<int64_t>(bytes), device);
      }
    });
    c10::Device where(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device));
    return c10::DataPtr(ptr, ptr, &free_device_memory, where);
  }

  c10::DeleterFnPtr raw_deleter() const override { return &free_device_memory; }

  // Storage copies (a storage's clone, a copy-on-write tensor's first write) run in order on
  // the current stream, after the work queued on the source device's current stream (the
  // source may live on another device than the current one).
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    OPENNEURON_RUNTIME_CALL({
      auto& rt = Runtime::get();
      const int current = runtime::current_device();
      int source_device = current;
      for (int d = 0; d < rt.device_count(); ++d) {
        if (rt.device(d).allocator().owns(src)) source_device = d;
      }
      runtime::copy_device_to_device(runtime::current_stream(current), dest,
                                     runtime::current_stream(source_device), src, count);
    });
  }

  bool initialized() override { return Runtime::is_initialized(); }

  void emptyCache(c10::MempoolId_t) override {
    if (!Runtime::is_initialized()) return;
    OPENNEURON_RUNTIME_CALL({
      auto& rt = Runtime::get();
      for (int d = 0; d < rt.device_count(); ++d) rt.device(d).allocator().empty_cache();
    });
  }

  void recordStream(const c10::DataPtr& data, c10::Stream stream) override {
    // By pointer on the data's own device (a copy-on-write DataPtr's context is PyTorch's
    // wrapper, not ours); the stream may belong to another device.
    if (!data.get()) return;
    OPENNEURON_RUNTIME_CALL({
      auto& rt = Runtime::get();
      runtime::Stream& user = rt.device(stream.device_index()).stream(stream.id());
      rt.device(data.device().index()).allocator().record_stream(data.get(), user);
    });
  }

  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    return device_stats(device);
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    allocator_of(device).reset_accumulated_stats();
  }

  void resetPeakStats(c10::DeviceIndex device) override { allocator_of(device).reset_peak_stats(); }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    auto& allocator = allocator_of(device);
    return {allocator.free_bytes(), allocator.capacity()};
  }
};

NeuronDeviceAllocator g_device_allocator;

}  // namespace

c10::DeviceAllocator* device_allocator() { return &g_device_allocator; }

c10::CachingDeviceAllocator::DeviceStats device_stats(c10::DeviceIndex device) {
  runtime::MemoryStats stats = allocator_of(device).stats();
  c10::CachingDeviceAllocator::DeviceStats result;
  result.allocation = to_c10(stats.allocation);
  result.segment = to_c10(stats.segment);
  result.active = to_c10(stats.active);
  result.allocated_bytes = to_c10(stats.allocated_bytes);
  result.reserved_bytes = to_c10(stats.reserved_bytes);
  result.active_bytes = to_c10(stats.active_bytes);
  result.requested_bytes = to_c10(stats.requested_bytes);
  result.num_alloc_retries = stats.num_alloc_retries;
  result.num_ooms = stats.num_ooms;
  result.num_device_alloc = stats.num_device_alloc;
  result.num_device_free = stats.num_device_free;
  result.num_sync_all_streams = stats.num_sync_all_streams;
  return result;
}

void resize_storage_bytes(const c10::Storage& storage, size_t bytes) {
  TORCH_CHECK(storage.resizable(), "cannot resize a neuron storage that is not resizable");
  c10::DataPtr fresh = storage.allocator()->allocate(bytes);
  const size_t kept = std::min(bytes, storage.nbytes());
  if (kept > 0 && storage.data()) {
    OPENNEURON_RUNTIME_CALL({
      auto& stream = runtime::current_stream(fresh.device().index());
      runtime::copy_device_to_device(stream, fresh.get(), stream, storage.data(), kept);
    });
  }
  storage.unsafeGetStorageImpl()->set_data_ptr_noswap(std::move(fresh));
  storage.unsafeGetStorageImpl()->set_nbytes(bytes);
}

}  // namespace openneuron::bridge

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &openneuron::bridge::g_device_allocator);
