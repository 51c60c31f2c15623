// Device memory history for torch.neuron.memory._record_memory_history() and _snapshot():
// allocation and free events with the Python stack that made each allocation, in the format
// PyTorch's memory visualizer (torch.cuda._memory_viz) reads.
#pragma once

#include <torch/csrc/utils/pybind.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace openneuron::bridge {

namespace detail {
extern std::atomic<bool> g_memory_history_enabled;
}

// True while history is recorded; one relaxed atomic load, for the allocator's hot path.
inline bool memory_history_enabled() {
  return detail::g_memory_history_enabled.load(std::memory_order_relaxed);
}

// Called by the device allocator for every allocation and free while history is on.
void memory_history_on_alloc(int device, void* ptr, size_t bytes, int64_t stream);
void memory_history_on_free(int device, void* ptr, size_t bytes, int64_t stream);

// Adds _record_memory_history(enabled, stacks, max_entries) and _memory_snapshot() to `module`.
void register_memory_history(pybind11::module& module);

}  // namespace openneuron::bridge
