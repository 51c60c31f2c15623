// Executing instructions on a CoreState.
#pragma once

#include "sim/isa.h"
#include "sim/state.h"

namespace openneuron::sim {

// The reference interpreter, the living definition of each instruction (isa.h): it addresses
// every element through its access pattern and computes each output element on its own.
// Throws SimError (uninitialized-read) when an input element was never written.
void execute_reference(CoreState& state, const Instruction& instruction);

// The fast executor: the same results (bit for bit; tests hold it to that), moving whole rows
// between memory and dense fp32 arrays and running blocked, vectorisable loops.
void execute_fast(CoreState& state, const Instruction& instruction);

}  // namespace openneuron::sim
