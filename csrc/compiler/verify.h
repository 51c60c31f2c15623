// The IR's structural rules, checked between passes.
#pragma once

#include <stdexcept>
#include <string>

#include "compiler/ir.h"

namespace openneuron::compiler {

// A graph that breaks a rule: the message names the rule, the node (index and op) and value.
class VerifyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws VerifyError unless: every value is defined once (input or node output) before it is
// read; reference attrs point at the node's inputs or outputs; pointwise nodes name a known fn, a
// compute dtype and take that fn's number of tensor inputs; fused bodies hold only elementwise
// nodes, bind one input per node input, and define outputs of one shape and of the node's types;
// graph outputs are defined. `where` prefixes the message (e.g. the pass that ran last).
void verify(const Graph& graph, const std::string& where = "");

}  // namespace openneuron::compiler
