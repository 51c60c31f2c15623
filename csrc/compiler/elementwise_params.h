// A pointwise node's attributes as the kernel library's call: op, compute dtype, parameters.
#pragma once

#include "compiler/ir.h"
#include "kernels/pointwise/pointwise.h"

namespace openneuron::compiler {

struct ElementwiseCall {
  kernels::PointwiseOp op;
  DType compute;
  kernels::PointwiseParams params;
};

// Reads fn, compute and p0..p3 (Int or Float; missing means absent). Throws
// std::invalid_argument for an unknown fn or dtype.
ElementwiseCall elementwise_call(const Node& pointwise_node);

}  // namespace openneuron::compiler
