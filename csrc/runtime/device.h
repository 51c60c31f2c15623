// One logical NeuronCore: its memory allocator and its streams.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>

#include "runtime/caching_allocator.h"
#include "runtime/config.h"
#include "runtime/stream.h"

namespace openneuron::runtime {

class Device {
 public:
  // Stream ids 1..kPoolSize name the pool streams; 0 is the default stream.
  static constexpr int kPoolSize = 32;

  Device(int index, const RuntimeConfig& config);

  int index() const { return index_; }
  CachingAllocator& allocator() { return allocator_; }
  // Made with the device, so reaching it (on every op) takes no lock.
  Stream& default_stream() { return *streams_[0]; }

  // The stream with this id; throws Error for an id outside [0, kPoolSize].
  Stream& stream(int64_t id);

  // A pool stream, round robin, for callers asking for a "new" stream.
  Stream& next_pool_stream();

  // Waits for every stream of the device (Stream::finish: work no thread runs yet runs on the
  // caller); throws the first queued error found.
  void synchronize();

  // Waits for every stream of the device without raising queued errors (they stay for the
  // next synchronize).
  void wait_idle();
  // Stream::halt for every stream of the device (at process exit), sharing one deadline.
  void halt_streams(std::chrono::milliseconds timeout);

 private:
  const int index_;
  const bool launch_blocking_;
  CachingAllocator allocator_;
  // The streams created so far (null where none was), read under streams_mutex_.
  std::array<Stream*, kPoolSize + 1> existing_streams();
  std::mutex streams_mutex_;
  // The default stream at construction, the others on first use.
  std::array<std::unique_ptr<Stream>, kPoolSize + 1> streams_;
  std::atomic<int> next_pool_index_{0};
};

}  // namespace openneuron::runtime
