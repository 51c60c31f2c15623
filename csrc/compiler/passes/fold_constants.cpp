// Constant folding of size arithmetic and of elementwise ops on host scalars.
#include <cmath>
#include <unordered_map>

#include "compiler/names.h"
#include "compiler/ops.h"
#include "compiler/passes/passes.h"
#include "compiler/scalar_eval.h"

namespace openneuron::compiler {

namespace {

bool fold_sym(Node& node, const std::unordered_map<int, int64_t>& known, int64_t* result) {
  const std::string fn = node.string_attr("fn");
  if (fn == "const" || fn == "size") return false;
  std::vector<int64_t> args;
  for (int input : node.inputs) {
    const auto it = known.find(input);
    if (it == known.end()) return false;
    args.push_back(it->second);
  }
  if (fn == "neg" && args.size() == 1) {
    *result = -args[0];
  } else if (args.size() != 2) {
    return false;
  } else if (fn == "add") {
    *result = args[0] + args[1];
  } else if (fn == "sub") {
    *result = args[0] - args[1];
  } else if (fn == "mul") {
    *result = args[0] * args[1];
  } else if ((fn == "floordiv" || fn == "mod") && args[1] != 0) {
    int64_t q = args[0] / args[1];
    if ((args[0] % args[1] != 0) && ((args[0] < 0) != (args[1] < 0))) --q;  // Python floor
    *result = fn == "floordiv" ? q : args[0] - q * args[1];
  } else {
    return false;
  }
  return true;
}

}  // namespace

void fold_constants(Graph& graph) {
  std::unordered_map<int, int64_t> known_ints;   // value -> constant sym result
  std::unordered_map<int, const Node*> scalars;  // value -> its scalar node
  for (Node& node : graph.nodes) {
    if (node.op == ops::kSym) {
      int64_t value = 0;
      if (node.string_attr("fn") == "const") {
        known_ints[node.outputs[0]] = node.int_attr("value", 0);
      } else if (fold_sym(node, known_ints, &value)) {
        node.inputs.clear();
        node.attrs = {{"fn", Attr::string("const")}, {"value", Attr::integer(value)}};
        known_ints[node.outputs[0]] = value;
      }
      continue;
    }
    if (node.op == ops::kScalar) {
      scalars[node.outputs[0]] = &node;
      continue;
    }
    if (node.op != ops::kPointwise && node.op != ops::kCast) continue;
    std::vector<HostScalar> args;
    for (int input : node.inputs) {
      const auto it = scalars.find(input);
      if (it == scalars.end()) break;
      args.push_back(host_scalar_of(*it->second, graph.values[input].dtype));
    }
    if (args.size() != node.inputs.size() || args.empty()) continue;
    const HostScalar folded = evaluate_elementwise(node, args, graph.values[node.outputs[0]].dtype);
    node.op = ops::kScalar;
    node.inputs.clear();
    node.attrs = {{"value", folded.attr()}};
    scalars[node.outputs[0]] = &node;
  }
  eliminate_dead_code(graph);
}

}  // namespace openneuron::compiler
