// Computing on never-written elements, as the hardware does with whatever bytes a tile holds:
// AWS's kernels do it where the results are never used (a tile computed whole though only half
// was filled, a matmul over columns a masked store drops). The results that depend on such an
// element stay never written, so only their later use (a DMA store, an instruction that is not
// covered here) is reported.
#pragma once

#include "sim/isa.h"
#include "sim/state.h"

namespace openneuron::sim {

// For elementwise instructions (tensor_tensor, tensor_scalar, activation, with or without
// their row reduction), tensor_reduce and matmul that read never-written elements: runs
// `instruction` (reference or fast) and marks never written every result element that
// depends on one, leaving the sources' marks as they were (except where a result overwrote a
// source element); returns true. Returns false, doing nothing, when the instruction reads
// none or is not of these kinds.
bool execute_computing_on_unwritten(CoreState& state, const Instruction& instruction,
                                    bool reference);

}  // namespace openneuron::sim
