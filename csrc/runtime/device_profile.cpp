#include "runtime/device_profile.h"

#include "runtime/errors.h"

namespace openneuron::runtime {

namespace {
constexpr uint64_t kGiB = uint64_t{1} << 30;
}

const std::vector<DeviceProfile>& known_profiles() {
  // trn2 at its default LNC=2: 96 GiB HBM and 8 physical cores per chip -> 4 logical cores.
  // trn3: 144 GiB per chip, 4 logical cores of two physical v4 cores each.
  static const std::vector<DeviceProfile> profiles = {
      {"trn2", "v3", 24 * kGiB, 2 * 79.0, 2 * 20.0, 2900.0 / 4},
      {"trn3", "v4", 36 * kGiB, 2 * 79.0, 2 * 20.0, 4900.0 / 4},
  };
  return profiles;
}

const DeviceProfile& profile_by_name(const std::string& name) {
  std::string accepted;
  for (const auto& profile : known_profiles()) {
    if (profile.name == name) return profile;
    accepted += (accepted.empty() ? "" : ", ") + profile.name;
  }
  throw ConfigError("OPENNEURON_PROFILE='" + name +
                    "' is not a known device profile; accepted values: " + accepted);
}

}  // namespace openneuron::runtime
