// The hardware's rules for each instruction, checked before anything runs.
#pragma once

#include "sim/isa.h"
#include "sim/layout.h"
#include "sim/profile.h"

namespace openneuron::sim {

// Checks every instruction of `program` against the rules of `profile` and the placement in
// `layout`: operand bounds and shapes, partition count, stride and start alignment, which engine
// may touch which memory, matmul/transpose limits and placement, PSUM banks, dtypes. Throws the
// first violation as a SimError naming its rule and the instruction's source line.
void check_rules(const Program& program, const CoreProfile& profile, const Layout& layout);

}  // namespace openneuron::sim
