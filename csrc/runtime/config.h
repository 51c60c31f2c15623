// Runtime settings read from OPENNEURON_* environment variables.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/device_profile.h"

namespace openneuron::runtime {

struct RuntimeConfig {
  int device_count = 2;          // OPENNEURON_DEVICES, 1..64
  DeviceProfile profile;         // OPENNEURON_PROFILE: trn2 (default) or trn3
  uint64_t device_memory_bytes;  // profile HBM, capped by OPENNEURON_HBM_BYTES
  bool launch_blocking = false;  // OPENNEURON_LAUNCH_BLOCKING=1 runs queued work inline
  bool strict = false;           // OPENNEURON_STRICT=1 turns host fallback into an error
};

// Reads the environment. Throws ConfigError naming the variable and the accepted values
// when one is set to something invalid; unset variables take their defaults.
RuntimeConfig config_from_environment();

// Parses a byte count such as "1048576", "512M", "2G", "64K" (binary multiples, optional
// trailing "B" or "iB"). Throws ConfigError mentioning `variable` on malformed input.
uint64_t parse_byte_size(const std::string& text, const char* variable);

}  // namespace openneuron::runtime
