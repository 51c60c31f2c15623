// Page-locked ("pinned") host memory: buffers that asynchronous copies may read or write
// after the host call has returned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/event.h"
#include "runtime/stream.h"

namespace openneuron::runtime {

class PinnedHostMemory {
 public:
  static PinnedHostMemory& instance();

  // A 64-byte aligned host buffer, or nullptr for 0 bytes. Throws std::bad_alloc.
  void* allocate(size_t bytes);

  // Releases a buffer; if asynchronous copies queued on streams still use it (see
  // record_use), the memory is kept until they complete.
  void free(void* ptr);

  // True when ptr lies inside a live pinned buffer.
  bool is_pinned(const void* ptr) const;

  // Declares that work queued on `stream` so far reads or writes the buffer holding ptr.
  void record_use(const void* ptr, Stream& stream);

  size_t live_bytes() const;

 private:
  struct Buffer {
    size_t size;
    std::vector<std::shared_ptr<Event>> uses;
  };
  void release_completed();

  mutable std::mutex mutex_;
  std::map<uintptr_t, Buffer> live_;
  std::vector<std::pair<void*, std::vector<std::shared_ptr<Event>>>> deferred_;
  size_t live_bytes_ = 0;
};

}  // namespace openneuron::runtime
