// Placement of on-chip buffers: each buffer lives from the first to the last instruction that
// touches it, and gets SBUF bytes (or PSUM banks) that no other live buffer holds.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/isa.h"
#include "sim/profile.h"

namespace openneuron::sim {

struct Layout {
  std::vector<int64_t> base;       // per buffer: byte offset inside each partition (on-chip)
  std::vector<int32_t> first_use;  // per buffer: first instruction index, -1 if never used
  std::vector<int32_t> last_use;
  std::vector<std::vector<int32_t>> born_at;  // per instruction: buffers whose life starts there
  int64_t sbuf_peak_bytes = 0;                // per partition
  int64_t psum_peak_bytes = 0;
};

// Places every on-chip buffer. Allocation is next-fit around the memory (so a freed region is
// reused as late as possible, which lets loads run ahead of compute as double buffering does);
// SBUF in 64-byte units, PSUM in whole banks. Throws SimError (sbuf-capacity / psum-capacity)
// naming the buffer, its line and what else is live when the memory is full.
// `next_fit` false packs first-fit instead: the same rules, the smallest footprint (the
// functional state uses it; timing uses next-fit, whose reuse pattern models buffering).
Layout plan_layout(const Program& program, const CoreProfile& profile, bool next_fit = true);

}  // namespace openneuron::sim
