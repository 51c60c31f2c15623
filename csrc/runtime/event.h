// A marker in a stream's queue: record it, wait for it from the host or another stream,
// and time the work between two of them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "runtime/stream.h"

namespace openneuron::runtime {

class Event {
 public:
  explicit Event(bool enable_timing = false) : enable_timing_(enable_timing) {}

  // Marks the point after everything queued on `stream` so far. Re-recording replaces
  // the previous mark for later waits; earlier waits keep the mark they saw.
  void record(Stream& stream);

  // Makes `stream` wait, without blocking the host, until the latest record completes.
  // A never-recorded event is complete, so this is then a no-op.
  void block(Stream& stream) const;

  // True when the latest record has completed (or the event was never recorded).
  bool query() const;

  // Blocks the host until the latest record has completed.
  void synchronize() const;

  // Milliseconds between this event's completion and `end`'s. Both must have timing
  // enabled and have been recorded and completed; throws Error otherwise.
  double elapsed_ms(const Event& end) const;

  bool was_recorded() const;
  int device() const { return device_; }  // -1 until recorded

 private:
  struct Mark {
    std::mutex mutex;
    std::condition_variable reached;
    bool done = false;
    std::chrono::steady_clock::time_point when;
  };
  std::shared_ptr<Mark> latest_mark() const;

  const bool enable_timing_;
  int device_ = -1;
  mutable std::mutex mutex_;
  std::shared_ptr<Mark> mark_;
};

}  // namespace openneuron::runtime
