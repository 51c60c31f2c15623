#include "runtime/config.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <limits>

#include "runtime/errors.h"

namespace openneuron::runtime {

namespace {

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return (value && *value) ? value : nullptr;
}

bool parse_flag(const char* variable) {
  const char* value = env(variable);
  if (!value) return false;
  std::string text(value);
  if (text == "1" || text == "true" || text == "on" || text == "yes") return true;
  if (text == "0" || text == "false" || text == "off" || text == "no") return false;
  throw ConfigError(
      std::string(variable) + "='" + text +
      "' is not a valid switch; accepted values: 1, 0 (or true/false, on/off, yes/no)");
}

int parse_device_count(const char* variable) {
  const char* value = env(variable);
  if (!value) return 2;
  std::string text(value);
  bool digits = !text.empty() && std::all_of(text.begin(), text.end(),
                                             [](unsigned char c) { return std::isdigit(c) != 0; });
  int count = digits && text.size() < 4 ? std::atoi(text.c_str()) : -1;
  if (count < 1 || count > 64) {
    throw ConfigError(std::string(variable) + "='" + text +
                      "' is not a valid device count; accepted values: an integer from 1 to 64");
  }
  return count;
}

}  // namespace

uint64_t parse_byte_size(const std::string& text, const char* variable) {
  auto fail = [&]() -> uint64_t {
    throw ConfigError(std::string(variable) + "='" + text +
                      "' is not a valid byte size; accepted values: a positive integer with an "
                      "optional K, M, G or T suffix, e.g. 1048576, 512M, 2G");
  };
  size_t end = 0;
  uint64_t number = 0;
  for (; end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])); ++end) {
    const uint64_t digit = static_cast<uint64_t>(text[end] - '0');
    if (number > (std::numeric_limits<uint64_t>::max() - digit) / 10) return fail();  // overflow
    number = number * 10 + digit;
  }
  if (end == 0) return fail();
  std::string suffix = text.substr(end);
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (suffix.size() >= 2 && suffix.substr(suffix.size() - 2) == "IB")
    suffix.resize(suffix.size() - 2);
  else if (suffix.size() >= 2 && suffix.back() == 'B')
    suffix.pop_back();
  int shift = 0;
  if (suffix.empty() || suffix == "B")
    shift = 0;
  else if (suffix == "K")
    shift = 10;
  else if (suffix == "M")
    shift = 20;
  else if (suffix == "G")
    shift = 30;
  else if (suffix == "T")
    shift = 40;
  else
    return fail();
  // Zero, or a size that does not fit in 64 bits (it would wrap to a tiny capacity).
  if (number == 0 || number > (std::numeric_limits<uint64_t>::max() >> shift)) return fail();
  return number << shift;
}

RuntimeConfig config_from_environment() {
  RuntimeConfig config;
  config.device_count = parse_device_count("OPENNEURON_DEVICES");
  const char* profile = env("OPENNEURON_PROFILE");
  config.profile = profile ? profile_by_name(profile) : known_profiles().front();
  config.device_memory_bytes = config.profile.hbm_bytes;
  if (const char* cap = env("OPENNEURON_HBM_BYTES")) {
    config.device_memory_bytes =
        std::min(config.device_memory_bytes, parse_byte_size(cap, "OPENNEURON_HBM_BYTES"));
  }
  config.launch_blocking = parse_flag("OPENNEURON_LAUNCH_BLOCKING");
  config.strict = parse_flag("OPENNEURON_STRICT");
  return config;
}

}  // namespace openneuron::runtime
