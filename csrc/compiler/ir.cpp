// Small helpers over the graph IR.
#include "compiler/ir.h"

#include <cstring>

namespace openneuron::compiler {

bool Attr::operator==(const Attr& other) const {
  if (kind != other.kind) return false;
  switch (kind) {
    case Kind::None:
      return true;
    case Kind::Bool:
    case Kind::Int:
    case Kind::Ref:
      return i == other.i;
    case Kind::Float:
      // Bitwise, so that NaN parameters compare equal to themselves (CSE) and -0.0 != 0.0.
      return std::memcmp(&f, &other.f, sizeof f) == 0;
    case Kind::String:
      return s == other.s;
    case Kind::List:
      return list == other.list;
  }
  return false;
}

const Attr* Node::attr(const std::string& name) const {
  const auto it = attrs.find(name);
  return it == attrs.end() ? nullptr : &it->second;
}

int64_t Node::int_attr(const std::string& name, int64_t otherwise) const {
  const Attr* a = attr(name);
  return a && (a->kind == Attr::Kind::Int || a->kind == Attr::Kind::Bool) ? a->i : otherwise;
}

std::string Node::string_attr(const std::string& name, const std::string& otherwise) const {
  const Attr* a = attr(name);
  return a && a->kind == Attr::Kind::String ? a->s : otherwise;
}

namespace {

void replace_in_attr(Attr& attr, int from, int to) {
  if (attr.kind == Attr::Kind::Ref && attr.i == from) attr.i = to;
  for (Attr& item : attr.list) replace_in_attr(item, from, to);
}

}  // namespace

void replace_uses(Graph& graph, int from, int to) {
  for (Node& node : graph.nodes) {
    for (int& input : node.inputs) {
      if (input == from) input = to;
    }
    for (auto& entry : node.attrs) replace_in_attr(entry.second, from, to);
  }
  for (int& output : graph.outputs) {
    if (output == from) output = to;
  }
}

std::vector<int> use_counts(const Graph& graph) {
  std::vector<int> counts(graph.values.size(), 0);
  for (const Node& node : graph.nodes) {
    for (int input : node.inputs) ++counts[input];
  }
  for (int output : graph.outputs) {
    if (output >= 0) ++counts[output];
  }
  return counts;
}

}  // namespace openneuron::compiler
