// The IR's text form. Printing numbers values in definition order, so print(parse(t)) == t for
// any printed t, and golden tests compare printed graphs.
//
//   graph(%0: f32[8, "s0"], %1: int) {
//     %2: f32[8, "s0"] = pointwise[compute=f32, fn="Exp"](%0)
//     %3: f32[8, "s0"]{1, 0} = extern[args=[%2, [1, 0]], overload="default",
//     target="aten::permute"](%2) return (%3)
//   }
//
// Tensor types are dtype[dims] with dims known ("8") or symbolic ("\"s0\""), then the physical
// dim order in braces when it is not row-major; host values are `int`, `float`, `none`.
#pragma once

#include <stdexcept>
#include <string>

#include "compiler/ir.h"

namespace openneuron::compiler {

// A malformed text: the message names the line and column and what was expected there.
class ParseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string print_graph(const Graph& graph);

// Throws ParseError. The result is not verified (see verify.h).
Graph parse_graph(const std::string& text);

}  // namespace openneuron::compiler
