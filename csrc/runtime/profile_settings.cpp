#include "runtime/profile_settings.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <stdexcept>

namespace openneuron::runtime {

namespace {

std::string trimmed(const std::string& text) {
  size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

std::string lowered(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (true) {
    size_t end = text.find(separator, begin);
    parts.push_back(trimmed(text.substr(begin, end - begin)));
    if (end == std::string::npos) return parts;
    begin = end + 1;
  }
}

int64_t parse_integer(const std::string& text, const std::string& what) {
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size()) {
    throw std::invalid_argument(what + ": expected an integer, got '" + text + "'");
  }
  return value;
}

bool parse_bool(const std::string& text, const std::string& what) {
  const std::string value = lowered(text);
  if (value == "1" || value == "true") return true;
  if (value == "0" || value == "false") return false;
  throw std::invalid_argument(what + ": expected true or false, got '" + text + "'");
}

void set_modes(ProfileSettings& settings, const std::string& text) {
  settings.device = settings.runtime = settings.cpu_util = settings.host_memory = false;
  const std::map<std::string, bool ProfileSettings::*> modes = {
      {"device", &ProfileSettings::device},
      {"runtime", &ProfileSettings::runtime},
      {"cpu_util", &ProfileSettings::cpu_util},
      {"host_memory", &ProfileSettings::host_memory},
  };
  if (trimmed(text).empty()) return;  // no modes: a CPU-side profile only
  for (const std::string& name : split(text, ',')) {
    auto mode = modes.find(lowered(name));
    if (mode == modes.end()) {
      throw std::invalid_argument("profiler config 'modes': unknown mode '" + name +
                                  "' (known: device, runtime, cpu_util, host_memory)");
    }
    settings.*(mode->second) = true;
  }
}

}  // namespace

std::set<int> parse_core_list(const std::string& text) {
  std::set<int> cores;
  const std::string what = "profiler config 'capture_enabled_for_nc'";
  for (const std::string& part : split(text, ',')) {
    size_t dash = part.find('-');
    int64_t first = parse_integer(trimmed(part.substr(0, dash)), what);
    int64_t last =
        dash == std::string::npos ? first : parse_integer(trimmed(part.substr(dash + 1)), what);
    if (first < 0 || last < first || last > 4095) {
      throw std::invalid_argument(what + ": '" + part +
                                  "' is not a core index or an increasing range of them");
    }
    for (int64_t core = first; core <= last; ++core) cores.insert(static_cast<int>(core));
  }
  return cores;
}

ProfileSettings parse_profile_settings(const std::string& text) {
  ProfileSettings settings;
  if (trimmed(text).empty()) return settings;
  for (const std::string& item : split(text, ';')) {
    if (item.empty()) continue;
    size_t colon = item.find(':');
    if (colon == std::string::npos) {
      throw std::invalid_argument("profiler config: expected each item as 'key:value', got '" +
                                  item + "'");
    }
    const std::string key = lowered(trimmed(item.substr(0, colon)));
    const std::string value = trimmed(item.substr(colon + 1));
    const std::string what = "profiler config '" + key + "'";
    if (key == "modes") {
      set_modes(settings, value);
    } else if (key == "max_events_per_nc") {
      settings.max_events_per_core = parse_integer(value, what);
    } else if (key == "capture_enabled_for_nc") {
      settings.cores = parse_core_list(value);
    } else if (key == "profile_output_dir") {
      settings.output_dir = value;
    } else if (key == "neff_cache_dir") {
      settings.neff_cache_dir = value;
    } else if (key == "precache_node_info") {
      settings.precache_node_info = parse_bool(value, what);
    } else if (key == "sample_period_ms") {
      settings.sample_period_ms = parse_integer(value, what);
      if (settings.sample_period_ms < 1) {
        throw std::invalid_argument(what + ": must be at least 1, got '" + value + "'");
      }
    } else {
      throw std::invalid_argument(
          "profiler config: unknown key '" + key +
          "' (known: modes, max_events_per_nc, capture_enabled_for_nc, profile_output_dir, "
          "neff_cache_dir, precache_node_info, sample_period_ms)");
    }
  }
  return settings;
}

std::vector<Activity> select_activities(const std::vector<Activity>& activities,
                                        const ProfileSettings& settings) {
  std::vector<size_t> kept;
  std::map<int, std::vector<size_t>> by_core;
  for (size_t i = 0; i < activities.size(); ++i) {
    if (settings.cores.empty() || settings.cores.count(activities[i].device)) {
      by_core[activities[i].device].push_back(i);
    }
  }
  for (auto& [core, indices] : by_core) {
    if (settings.max_events_per_core >= 0 &&
        indices.size() > static_cast<size_t>(settings.max_events_per_core)) {
      std::stable_sort(indices.begin(), indices.end(), [&](size_t a, size_t b) {
        return activities[a].start_ns < activities[b].start_ns;
      });
      indices.resize(static_cast<size_t>(settings.max_events_per_core));
    }
    kept.insert(kept.end(), indices.begin(), indices.end());
  }
  std::sort(kept.begin(), kept.end());
  std::vector<Activity> result;
  result.reserve(kept.size());
  for (size_t i : kept) result.push_back(activities[i]);
  return result;
}

}  // namespace openneuron::runtime
