// Executing instructions on a CoreState.
#pragma once

#include "sim/isa.h"
#include "sim/state.h"

namespace openneuron::sim {

// The reference interpreter, the living definition of each instruction (isa.h): it addresses
// every element through its access pattern and computes each output element on its own.
// Throws SimError (uninitialized-read) when an input element was never written.
void execute_reference(CoreState& state, const Instruction& instruction);

// The fast executor: the same results (bit for bit; tests hold it to that). Elementwise
// instructions and copies stream their operands in chunks through vectorisable loops, with the
// written-state checked once per operand (fast_executor.cpp); the rest go through execute_rows.
void execute_fast(CoreState& state, const Instruction& instruction);

// Moves whole operands between memory and dense fp32 arrays, then computes: the fast
// executor's general path.
void execute_rows(CoreState& state, const Instruction& instruction);

// Throws SimError (uninitialized-read) naming the first element of `ap` never written.
[[noreturn]] void report_unwritten(CoreState& state, const Instruction& instruction,
                                   const AccessPattern& ap);

}  // namespace openneuron::sim
