// Exceptions the runtime raises; the bridge maps each to the matching Python error.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace openneuron::runtime {

// Base of every runtime error; what() is a complete, user-facing sentence.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An OPENNEURON_* environment variable holds a value the runtime cannot accept.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// A device index outside [0, device_count).
class DeviceIndexError : public Error {
 public:
  using Error::Error;
};

// The device's memory capacity cannot hold a requested allocation, even after the
// allocator released its cached blocks.
class OutOfMemoryError : public Error {
 public:
  OutOfMemoryError(const std::string& message, uint64_t requested, uint64_t free_bytes,
                   uint64_t capacity)
      : Error(message), requested(requested), free_bytes(free_bytes), capacity(capacity) {}
  uint64_t requested;
  uint64_t free_bytes;
  uint64_t capacity;
};

// Work queued on a stream failed; raised at the next synchronizing call.
class QueuedWorkError : public Error {
 public:
  using Error::Error;
};

// The runtime was initialised in a parent process and used again after fork().
class ForkedChildError : public Error {
 public:
  using Error::Error;
};

}  // namespace openneuron::runtime
