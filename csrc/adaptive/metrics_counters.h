// Adaptive eager's process-wide counters (internal to this folder).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace openneuron::adaptive {

struct Counters {
  std::atomic<int64_t> ops_recorded{0}, segments{0}, fused_segments{0}, fused_ops{0}, single_ops{0},
      cache_hits{0}, compiles{0}, fallbacks{0}, stores_skipped{0}, ended_by_shape{0},
      ended_by_alias{0}, ended_by_limit{0}, ended_by_stream{0}, ran_at_once{0};
};

Counters& counters();

inline void count(std::atomic<int64_t> Counters::* counter, int64_t n = 1) {
  (counters().*counter).fetch_add(n, std::memory_order_relaxed);
}

// Counts a fallback and keeps its reason; the first one of each reason is printed once.
void note_fallback(const std::string& reason);

bool perturb_fused_results();

}  // namespace openneuron::adaptive
