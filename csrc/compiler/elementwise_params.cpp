// Decoding of pointwise node attributes.
#include "compiler/elementwise_params.h"

#include <stdexcept>
#include <string>

#include "compiler/names.h"

namespace openneuron::compiler {

ElementwiseCall elementwise_call(const Node& node) {
  ElementwiseCall call{};
  if (!parse_pointwise_op(node.string_attr("fn"), &call.op)) {
    throw std::invalid_argument("compiler: unknown pointwise fn '" + node.string_attr("fn") + "'");
  }
  if (!parse_dtype(node.string_attr("compute"), &call.compute)) {
    throw std::invalid_argument("compiler: pointwise node without a compute dtype");
  }
  for (int k = 0; k < 4; ++k) {
    const Attr* p = node.attr("p" + std::to_string(k));
    if (!p || p->kind == Attr::Kind::None) continue;
    call.params.present[k] = true;
    call.params.values[k] = p->kind == Attr::Kind::Float ? kernels::Scalar::from_double(p->f)
                                                         : kernels::Scalar::from_int(p->i);
  }
  return call;
}

}  // namespace openneuron::compiler
