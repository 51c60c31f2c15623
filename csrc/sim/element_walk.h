// Walking an operand's elements in row-major order, by address: what instructions that move or
// read elements one at a time share (the reference interpreter, the microscaling ones).
#pragma once

#include <cstdint>

#include "sim/isa.h"
#include "sim/state.h"

namespace openneuron::sim {

// Calls visit(element address, position) for every element of `ap` in row-major order.
template <typename Visit>
void for_each_element(const CoreState& state, const AccessPattern& ap, Visit&& visit) {
  const bool on_chip = state.program().buffers[ap.buffer].memory != Memory::kHbm;
  const int64_t size = dtype_size(ap.dtype);
  const int first_free = on_chip ? 1 : 0;
  int64_t index[kMaxDims] = {0, 0, 0, 0, 0};
  const int64_t total = ap.elements();
  for (int64_t n = 0; n < total; ++n) {
    int64_t offset = ap.offset;
    for (int d = first_free; d < ap.rank; ++d) offset += index[d] * ap.dims[d].stride;
    visit(state.row(ap, on_chip ? index[0] : 0) + offset * size, n);
    for (int d = ap.rank - 1; d >= 0; --d) {
      if (++index[d] < ap.dims[d].size) break;
      index[d] = 0;
    }
  }
}

}  // namespace openneuron::sim
