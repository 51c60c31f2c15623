// Counters a caching allocator keeps, in the shape PyTorch's memory_stats() reports.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

namespace openneuron::runtime {

// One counter: its current value, the peak since the last reset, and the running totals
// of increases (allocated) and decreases (freed).
struct Stat {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocated = 0;
  int64_t freed = 0;

  void increase(int64_t amount) {
    current += amount;
    allocated += amount;
    peak = std::max(peak, current);
  }
  void decrease(int64_t amount) {
    current -= amount;
    freed += amount;
  }
  void reset_peak() { peak = current; }
  void reset_accumulated() { allocated = freed = 0; }
};

// Index 0 aggregates both pools; 1 is the small-block pool, 2 the large-block pool.
enum PoolIndex { kAllPools = 0, kSmallPool = 1, kLargePool = 2 };
using StatArray = std::array<Stat, 3>;

struct MemoryStats {
  StatArray allocation;           // live allocations (count)
  StatArray segment;              // device memory segments held (count)
  StatArray active;               // blocks allocated or awaiting stream completion (count)
  StatArray allocated_bytes;      // bytes of live allocations (rounded sizes)
  StatArray reserved_bytes;       // bytes of device memory held, cached or not
  StatArray active_bytes;         // bytes of active blocks
  StatArray requested_bytes;      // bytes the callers asked for (unrounded)
  int64_t num_alloc_retries = 0;  // allocations that needed the cache released first
  int64_t num_ooms = 0;
  int64_t num_device_alloc = 0;
  int64_t num_device_free = 0;
  int64_t num_sync_all_streams = 0;
};

}  // namespace openneuron::runtime
