// The c10::DeviceAllocator for neuron tensors, over the runtime's caching allocators.
#pragma once

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/Storage.h>

namespace openneuron::bridge {

// The registered allocator (also reachable as c10::GetAllocator(kPrivateUse1)).
c10::DeviceAllocator* device_allocator();

// Statistics of one device in c10's layout (what torch.accelerator.memory_stats reports).
c10::CachingDeviceAllocator::DeviceStats device_stats(c10::DeviceIndex device);

// Resizes a neuron storage to `bytes` (0 frees its memory), keeping the leading contents in
// stream order (what `untyped_storage().resize_()` and FSDP's parameter freeing call).
void resize_storage_bytes(const c10::Storage& storage, size_t bytes);

}  // namespace openneuron::bridge
