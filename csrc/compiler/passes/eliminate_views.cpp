// View and layout elimination on extern view ops whose effect cancels out.
#include <unordered_map>
#include <unordered_set>

#include "compiler/ops.h"
#include "compiler/passes/passes.h"

namespace openneuron::compiler {

namespace {

bool is_target(const Node& node, const char* target) {
  return node.op == ops::kExtern && node.string_attr("target") == target;
}

// The int list at args[index] (empty, false if it is not a list of known ints).
bool int_list_arg(const Node& node, size_t index, std::vector<int64_t>* out) {
  const Attr* args = node.attr("args");
  if (!args || args->list.size() <= index || args->list[index].kind != Attr::Kind::List) {
    return false;
  }
  for (const Attr& item : args->list[index].list) {
    if (item.kind != Attr::Kind::Int) return false;
    out->push_back(item.i);
  }
  return true;
}

bool int_arg(const Node& node, size_t index, int64_t* out) {
  const Attr* args = node.attr("args");
  if (!args || args->list.size() <= index || args->list[index].kind != Attr::Kind::Int) {
    return false;
  }
  *out = args->list[index].i;
  return true;
}

bool same_type(const Value& a, const Value& b) {
  return a.kind == ValueKind::Tensor && b.kind == ValueKind::Tensor && a.dtype == b.dtype &&
         a.shape == b.shape && a.dim_order == b.dim_order;
}

// Transposes of the same two dims (t() counts as dims 0 and 1) undo each other.
bool transposes(const Node& node, int64_t* a, int64_t* b, int rank) {
  if (is_target(node, "aten::t")) {
    *a = 0;
    *b = 1;
    return true;
  }
  if (!is_target(node, "aten::transpose") || !int_arg(node, 1, a) || !int_arg(node, 2, b)) {
    return false;
  }
  if (*a < 0) *a += rank;
  if (*b < 0) *b += rank;
  if (*a > *b) std::swap(*a, *b);
  return true;
}

}  // namespace

void eliminate_views(Graph& graph) {
  std::unordered_set<int> returned(graph.outputs.begin(), graph.outputs.end());
  std::unordered_map<int, size_t> producer;
  for (size_t k = 0; k < graph.nodes.size(); ++k) {
    const Node& node = graph.nodes[k];
    for (int output : node.outputs) producer[output] = k;
    if (node.op != ops::kExtern || node.outputs.size() != 1 || node.inputs.empty()) continue;
    const int out = node.outputs[0];
    if (returned.count(out)) continue;
    const int in = node.inputs[0];
    const Value& out_value = graph.values[out];
    int replacement = -1;
    if ((is_target(node, "aten::view") || is_target(node, "aten::_unsafe_view") ||
         is_target(node, "aten::reshape") || is_target(node, "aten::expand") ||
         is_target(node, "aten::alias")) &&
        same_type(graph.values[in], out_value)) {
      replacement = in;
    }
    const auto source = producer.find(in);
    const int rank = static_cast<int>(out_value.shape.size());
    int64_t a1, b1, a2, b2;
    if (replacement < 0 && source != producer.end() && transposes(node, &a1, &b1, rank)) {
      const Node& first = graph.nodes[source->second];
      if (transposes(first, &a2, &b2, rank) && a1 == a2 && b1 == b2 &&
          same_type(graph.values[first.inputs[0]], out_value)) {
        replacement = first.inputs[0];
      }
    }
    std::vector<int64_t> outer, inner;
    if (replacement < 0 && source != producer.end() && is_target(node, "aten::permute") &&
        int_list_arg(node, 1, &outer)) {
      const Node& first = graph.nodes[source->second];
      if (is_target(first, "aten::permute") && int_list_arg(first, 1, &inner) &&
          inner.size() == outer.size()) {
        bool identity = true;
        for (size_t d = 0; d < outer.size(); ++d) {
          const int64_t o = outer[d] < 0 ? outer[d] + rank : outer[d];
          const int64_t i = inner[o] < 0 ? inner[o] + rank : inner[o];
          identity &= i == static_cast<int64_t>(d);
        }
        if (identity && same_type(graph.values[first.inputs[0]], out_value)) {
          replacement = first.inputs[0];
        }
      }
    }
    if (replacement >= 0) replace_uses(graph, out, replacement);
  }
  eliminate_dead_code(graph);
}

}  // namespace openneuron::compiler
