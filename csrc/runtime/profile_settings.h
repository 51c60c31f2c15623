// What a profiling session records, from the "key:value;key:value" string a profiler config
// carries (torch.profiler's custom_profiler_config; TorchNeuron's NeuronConfig writes one), and
// the selection of recorded device activities it asks for. Torch-free.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "runtime/tracer.h"

namespace openneuron::runtime {

struct ProfileSettings {
  // Modes (TorchNeuron's ProfileMode): device ops with their projected NeuronCore times, the
  // runtime's per-stream activity, host CPU utilisation samples, host memory samples.
  bool device = true;
  bool runtime = true;
  bool cpu_util = false;
  bool host_memory = false;
  int64_t max_events_per_core = -1;  // < 0: no limit
  std::set<int> cores;               // empty: every core
  std::string output_dir;            // where NeuronProfiler writes; empty: its default
  std::string neff_cache_dir;        // accepted for TorchNeuron's scripts; nothing is copied
  bool precache_node_info = true;    // accepted; this runtime has nothing to warm up
  int64_t sample_period_ms = 10;     // CPU and memory sampling period

  // Whether the session records device activities at all.
  bool records_activities() const { return device || runtime; }
};

// Parses "modes:device,runtime;max_events_per_nc:1000;capture_enabled_for_nc:0,2-3;...".
// Keys and mode names are case-insensitive; an empty string gives the defaults. Throws
// std::invalid_argument naming the item for an item without ':', an unknown key or mode, or a
// value that is not what its key takes.
ProfileSettings parse_profile_settings(const std::string& text);

// Parses a core list such as "0,1,2-5" (throws std::invalid_argument naming the bad part).
std::set<int> parse_core_list(const std::string& text);

// The activities the settings keep: those of the selected cores, at most max_events_per_core
// per core (the earliest-starting), in their original order.
std::vector<Activity> select_activities(const std::vector<Activity>& activities,
                                        const ProfileSettings& settings);

}  // namespace openneuron::runtime
