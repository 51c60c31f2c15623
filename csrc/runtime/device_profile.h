// The NeuronCore generations the simulator models, and what each fixes for a device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace openneuron::runtime {

struct DeviceProfile {
  std::string name;          // "trn2", "trn3"
  std::string core_version;  // NeuronCore generation, e.g. "v3"
  uint64_t hbm_bytes;        // HBM per logical NeuronCore
  double peak_bf16_tflops;   // dense tensor-engine peak per logical core
  double peak_fp32_tflops;
  double hbm_gb_per_s;  // HBM bandwidth per logical core
};

// Every profile the runtime knows, default first.
const std::vector<DeviceProfile>& known_profiles();

// The profile called `name`; throws ConfigError naming the accepted names otherwise.
const DeviceProfile& profile_by_name(const std::string& name);

}  // namespace openneuron::runtime
