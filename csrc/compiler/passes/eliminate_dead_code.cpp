// Dead-code elimination: a backward sweep keeping nodes whose results are read.
#include <vector>

#include "compiler/ops.h"
#include "compiler/passes/passes.h"

namespace openneuron::compiler {

void eliminate_dead_code(Graph& graph) {
  std::vector<bool> needed(graph.values.size(), false);
  for (int output : graph.outputs) {
    if (output >= 0) needed[output] = true;
  }
  std::vector<bool> keep(graph.nodes.size(), false);
  for (size_t k = graph.nodes.size(); k-- > 0;) {
    const Node& node = graph.nodes[k];
    bool live = node.int_attr("impure", 0) != 0;
    for (int output : node.outputs) live |= needed[output];
    if (!live) continue;
    keep[k] = true;
    for (int input : node.inputs) needed[input] = true;
  }
  std::vector<Node> kept;
  kept.reserve(graph.nodes.size());
  for (size_t k = 0; k < graph.nodes.size(); ++k) {
    if (keep[k]) kept.push_back(std::move(graph.nodes[k]));
  }
  graph.nodes = std::move(kept);
}

}  // namespace openneuron::compiler
