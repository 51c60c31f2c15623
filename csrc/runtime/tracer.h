// Records what each stream runs while tracing is on: per-stream op start and end, the op's name,
// the correlation id of the host call that queued it, and the bytes of copies. Torch-free; the
// bridge feeds these activities to torch.profiler. With tracing off the cost is one atomic load.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

namespace openneuron::runtime {

enum class ActivityKind : uint8_t {
  kKernel,
  kCopyHostToDevice,
  kCopyDeviceToHost,
  kCopyDeviceToDevice,
};

// What a stream item is, for the trace: kernels by default, copies with their byte count.
struct TraceInfo {
  ActivityKind kind = ActivityKind::kKernel;
  uint64_t bytes = 0;
};

struct Activity {
  const char* name;  // the op name given to Stream::enqueue (storage outlives the stream)
  ActivityKind kind;
  int device;
  int64_t stream;
  uint64_t correlation;  // the launching thread's correlation id when queued; 0 if none
  int64_t start_ns;      // wall-clock nanoseconds since the epoch (the profiler's clock)
  int64_t end_ns;
  uint64_t bytes;
};

namespace tracer {

namespace detail {
extern std::atomic<bool> g_enabled;
}

// True while a trace is being recorded; one relaxed atomic load, for the hot path.
inline bool enabled() { return detail::g_enabled.load(std::memory_order_relaxed); }

// Wall-clock nanoseconds since the epoch, the clock torch.profiler stamps host events with.
inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Clears what was recorded and starts recording.
void start();

// Stops recording and hands back every activity recorded since start(), in completion order.
// Work still queued keeps running untraced; callers synchronize first to see all of it.
std::vector<Activity> stop();

// Sets the calling thread's correlation id, stamped on the work it queues while tracing
// (0 clears it). The profiler bridge sets it around each host op.
void set_correlation(uint64_t id);
uint64_t current_correlation();

// Appends one finished activity (thread-safe).
void record(const Activity& activity);

}  // namespace tracer
}  // namespace openneuron::runtime
