#include "runtime/pinned_host_memory.h"

#include <cstdlib>
#include <new>

namespace openneuron::runtime {

PinnedHostMemory& PinnedHostMemory::instance() {
  static auto* memory = new PinnedHostMemory();  // outlives any static tensor's deleter
  return *memory;
}

void* PinnedHostMemory::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* ptr = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!ptr) throw std::bad_alloc();
  std::lock_guard<std::mutex> lock(mutex_);
  release_completed();
  live_.emplace(reinterpret_cast<uintptr_t>(ptr), Buffer{bytes, {}});
  live_bytes_ += bytes;
  return ptr;
}

void PinnedHostMemory::release_completed() {
  for (size_t i = 0; i < deferred_.size();) {
    bool done = true;
    for (auto& event : deferred_[i].second) done = done && event->query();
    if (!done) {
      ++i;
      continue;
    }
    std::free(deferred_[i].first);
    deferred_[i] = std::move(deferred_.back());
    deferred_.pop_back();
  }
}

void PinnedHostMemory::free(void* ptr) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = live_.find(reinterpret_cast<uintptr_t>(ptr));
  if (found == live_.end()) return;
  live_bytes_ -= found->second.size;
  auto uses = std::move(found->second.uses);
  live_.erase(found);
  bool in_use = false;
  for (auto& event : uses) in_use = in_use || !event->query();
  if (in_use)
    deferred_.emplace_back(ptr, std::move(uses));
  else
    std::free(ptr);
  release_completed();
}

bool PinnedHostMemory::is_pinned(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = live_.upper_bound(reinterpret_cast<uintptr_t>(ptr));
  if (found == live_.begin()) return false;
  --found;
  return reinterpret_cast<uintptr_t>(ptr) < found->first + found->second.size;
}

void PinnedHostMemory::record_use(const void* ptr, Stream& stream) {
  auto event = std::make_shared<Event>();
  event->record(stream);
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = live_.upper_bound(reinterpret_cast<uintptr_t>(ptr));
  if (found == live_.begin()) return;
  --found;
  if (reinterpret_cast<uintptr_t>(ptr) >= found->first + found->second.size) return;
  auto& uses = found->second.uses;
  // Completed uses no longer matter; dropping them keeps the list short.
  for (size_t i = 0; i < uses.size();) {
    if (uses[i]->query()) {
      uses[i] = std::move(uses.back());
      uses.pop_back();
    } else {
      ++i;
    }
  }
  uses.push_back(std::move(event));
}

size_t PinnedHostMemory::live_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_bytes_;
}

}  // namespace openneuron::runtime
