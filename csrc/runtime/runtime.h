// The process-wide runtime: configuration, devices, and each thread's current device and
// stream. Initialised on first use, never torn down (worker threads may outlive main()).
#pragma once

#include <memory>
#include <vector>

#include "runtime/config.h"
#include "runtime/device.h"

namespace openneuron::runtime {

class Runtime {
 public:
  // The runtime, created from the environment on first call. Throws ConfigError for an
  // invalid OPENNEURON_* variable and ForkedChildError in a child forked after the parent
  // initialised it.
  static Runtime& get();

  // True once get() has succeeded in this process (false in a forked child).
  static bool is_initialized();
  // True in a child process forked after initialisation: the runtime cannot be used there.
  static bool in_bad_fork();
  // The configured device count without initialising; 0 if the configuration is invalid.
  static int device_count_or_zero() noexcept;

  const RuntimeConfig& config() const { return config_; }
  int device_count() const { return static_cast<int>(devices_.size()); }
  // Throws DeviceIndexError naming the devices that exist.
  Device& device(int index);
  void synchronize_all();

 private:
  explicit Runtime(RuntimeConfig config);
  RuntimeConfig config_;
  std::vector<std::unique_ptr<Device>> devices_;
};

// Checks `index` against the configured device count; throws DeviceIndexError.
void check_device_index(int index);

// The calling thread's current device (default 0) and setter (index is checked).
int current_device();
void set_current_device(int index);

// The calling thread's current stream on `device` (default: its default stream).
Stream& current_stream(int device);
void set_current_stream(Stream& stream);

}  // namespace openneuron::runtime
