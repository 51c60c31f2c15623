// Common-subexpression elimination keyed by a node's printed op, attributes, inputs and types.
// The `src` attribute (the user's source line, for error messages) is not part of the key: the
// casts autocast puts before each of q/k/v's projections are one cast written on three lines.
#include <sstream>
#include <unordered_map>

#include "compiler/names.h"
#include "compiler/ops.h"
#include "compiler/passes/passes.h"
#include "compiler/text.h"

namespace openneuron::compiler {

namespace {

void key_of_attr(std::ostringstream& key, const Attr& a) {
  key << static_cast<int>(a.kind) << ':';
  switch (a.kind) {
    case Attr::Kind::Float:
      key << std::hexfloat << a.f << std::defaultfloat;
      break;
    case Attr::Kind::String:
      key << a.s.size() << '"' << a.s;
      break;
    case Attr::Kind::List:
      key << '[';
      for (const Attr& item : a.list) key_of_attr(key, item);
      key << ']';
      break;
    default:
      key << a.i;
  }
  key << ';';
}

std::string key_of(const Graph& graph, const Node& node) {
  std::ostringstream key;
  key << node.op << '(';
  for (int input : node.inputs) key << input << ',';
  key << ")[";
  for (const auto& [name, value] : node.attrs) {
    if (name == "src") continue;
    key << name << '=';
    key_of_attr(key, value);
  }
  key << "]->";
  for (int output : node.outputs) {
    const Value& v = graph.values[output];
    key << static_cast<int>(v.kind) << dtype_short_name(v.dtype) << ',';
  }
  return key.str();
}

}  // namespace

void eliminate_common_subexpressions(Graph& graph) {
  std::unordered_map<std::string, size_t> seen;  // key -> index of the first such node
  for (size_t k = 0; k < graph.nodes.size(); ++k) {
    const Node& node = graph.nodes[k];
    if (node.int_attr("impure", 0) != 0 || node.body) continue;
    const std::string key = key_of(graph, node);
    const auto [it, inserted] = seen.emplace(key, k);
    if (inserted) continue;
    const Node& first = graph.nodes[it->second];
    for (size_t j = 0; j < node.outputs.size(); ++j) {
      replace_uses(graph, node.outputs[j], first.outputs[j]);
    }
  }
  eliminate_dead_code(graph);
}

}  // namespace openneuron::compiler
