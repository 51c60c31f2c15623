// Run-time offsets (IndirectOffset, isa.h): a DMA whose HBM address depends on values in SBUF,
// resolved when it runs into plain DMAs that both executors already define.
#pragma once

#include <vector>

#include "sim/isa.h"
#include "sim/state.h"

namespace openneuron::sim {

// Reads the index values of `ins` (each element checked written: uninitialized-read) and
// returns the plain kDmaCopy instructions it amounts to: one for a scalar offset, one per index
// row for a vector offset. A value outside [0, bound) throws out-of-bounds naming the value, its
// row, the bound and the kernel line, or (skip_out_of_bounds) leaves that transfer out.
std::vector<Instruction> resolve_indirect(CoreState& state, const Instruction& ins);

// The pattern covering every address the indirect operand of `ins` may reach, whatever the
// index values (for dependency tracking); `ap` itself when `ins` has no run-time offset.
AccessPattern indirect_reach(const Program& program, const Instruction& ins,
                             const AccessPattern& ap);

// The indirect operand as it is for index value `value` (vector: one row, dims[0] of size 1).
AccessPattern at_index(const Instruction& ins, int64_t value);

}  // namespace openneuron::sim
