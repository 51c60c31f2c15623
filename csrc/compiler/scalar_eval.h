// Host scalars of the IR (`scalar` nodes) and elementwise evaluation on them, with the kernel
// library's own loops, so a folded constant equals what the device would compute.
#pragma once

#include <cstdint>
#include <cstring>

#include "compiler/ir.h"

namespace openneuron::compiler {

// A scalar stored as `dtype` (for 16-bit floats, the bits of that type).
struct HostScalar {
  DType dtype = DType::Float32;
  alignas(8) unsigned char bytes[8] = {};

  // The value as a `scalar` node's attribute: Int for integer and bool dtypes, Float otherwise.
  Attr attr() const;
};

// The scalar node's value stored as `dtype`.
HostScalar host_scalar_of(const Node& scalar_node, DType dtype);

// Runs the pointwise or cast node on host scalars; the result is stored as `out_dtype`.
HostScalar evaluate_elementwise(const Node& node, const std::vector<HostScalar>& args,
                                DType out_dtype);

}  // namespace openneuron::compiler
