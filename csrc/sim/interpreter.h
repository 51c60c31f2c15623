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

// Transposes, tensor copies and DMAs marked carries_unwritten (same dtype, no run-time offset)
// carry never-written source elements along, as the hardware
// moves whatever bits are there: the matching destination elements stay never written, and
// whatever reads them later is reported. Runs `instruction` (on the reference interpreter or
// the fast executor) and returns true when it is such a move and reads an unwritten element of
// another buffer; otherwise does nothing and returns false.
bool execute_move_carrying_unwritten(CoreState& state, const Instruction& instruction,
                                     bool reference);

// Throws SimError (uninitialized-read) naming the first element of `ap` never written.
[[noreturn]] void report_unwritten(CoreState& state, const Instruction& instruction,
                                   const AccessPattern& ap);

}  // namespace openneuron::sim
