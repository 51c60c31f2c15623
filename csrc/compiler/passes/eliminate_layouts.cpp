// Layout elimination: copies that change nothing (same dtype, shape and layout) are removed
// when the copy's distinct buffer cannot matter (see passes.h for the rules).
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ops.h"
#include "compiler/passes/passes.h"

namespace openneuron::compiler {

namespace {

bool same_layout(const Value& a, const Value& b) {
  return a.kind == ValueKind::Tensor && b.kind == ValueKind::Tensor && a.dtype == b.dtype &&
         a.shape == b.shape && a.dim_order == b.dim_order;
}

bool is_none_or(const Attr& a, const std::string& text) {
  return a.kind == Attr::Kind::None || (a.kind == Attr::Kind::String && a.s == text);
}

// aten::clone(self, memory_format) and aten::_to_copy(self, dtype, layout, device, pin_memory,
// non_blocking, memory_format) that keep the device and allocate no pinned or other-layout
// tensor; the caller checks the value types (dtype and dim order) are the same.
bool is_plain_copy(const Node& node) {
  if (node.op == ops::kCast) return true;
  if (node.op != ops::kExtern || node.int_attr("impure", 0)) return false;
  const std::string target = node.string_attr("target");
  const Attr* args = node.attr("args");
  if (!args || args->kind != Attr::Kind::List || args->list.empty() ||
      args->list[0].kind != Attr::Kind::Ref || args->list[0].i != node.inputs[0]) {
    return false;
  }
  const std::vector<Attr>& a = args->list;
  auto format_ok = [](const Attr& f) {
    return is_none_or(f, "memory_format:preserve_format") ||
           is_none_or(f, "memory_format:contiguous_format");
  };
  if (target == "aten::clone") return a.size() == 2 && format_ok(a[1]);
  if (target == "aten::_to_copy") {
    if (a.size() != 7) return false;
    const bool unpinned =
        a[4].kind == Attr::Kind::None || (a[4].kind == Attr::Kind::Bool && !a[4].i);
    return is_none_or(a[2], "layout:strided") && a[3].kind == Attr::Kind::None && unpinned &&
           format_ok(a[6]);
  }
  return false;
}

// Nodes whose outputs are buffers the program allocates, dense in their dim order, aliasing
// nothing (a fused output may take over a dying input's buffer, which then has no other user).
bool allocates(const std::string& op) {
  return op == ops::kPointwise || op == ops::kCast || op == ops::kReduce || op == ops::kFused ||
         op == ops::kGemmEpilogue;
}

struct AliasSets {
  std::vector<int> parent;
  explicit AliasSets(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int v) { return parent[v] == v ? v : parent[v] = find(parent[v]); }
  void join(int a, int b) { parent[find(a)] = find(b); }
};

}  // namespace

void eliminate_layouts(Graph& graph) {
  const size_t n = graph.values.size();
  // Values that may share a buffer: a view's result and its input, and an impure extern's
  // results and inputs (an in-place op returns its argument).
  AliasSets sets(n);
  std::unordered_map<int, const Node*> producer;  // the node list is not resized below
  for (const Node& node : graph.nodes) {
    for (int out : node.outputs) producer[out] = &node;
    if (node.op != ops::kExtern || !(node.int_attr("view", 0) || node.int_attr("impure", 0))) {
      continue;
    }
    for (int out : node.outputs) {
      for (int in : node.inputs) {
        if (graph.values[in].kind == ValueKind::Tensor) sets.join(out, in);
      }
    }
  }
  // An impure extern is the only node that writes a value in place (the IR does not say which
  // argument), so every set an impure extern reads counts as written.
  std::vector<int> written;
  for (const Node& node : graph.nodes) {
    if (node.op == ops::kExtern && node.int_attr("impure", 0)) {
      for (int in : node.inputs) written.push_back(in);
    }
  }
  std::vector<int> exposed(graph.inputs.begin(), graph.inputs.end());
  exposed.insert(exposed.end(), graph.outputs.begin(), graph.outputs.end());
  auto touches = [&](const std::vector<int>& values, int v) {
    const int set = sets.find(v);
    for (int w : values) {
      if (sets.find(w) == set) return true;
    }
    return false;
  };
  for (size_t k = 0; k < graph.nodes.size(); ++k) {
    const Node& node = graph.nodes[k];  // replace_uses rewrites later nodes' inputs only
    if (node.outputs.size() != 1 || node.inputs.empty() || !is_plain_copy(node)) continue;
    const int in = node.inputs[0];
    const int out = node.outputs[0];
    if (!same_layout(graph.values[in], graph.values[out])) continue;
    const auto source = producer.find(in);
    if (source == producer.end() || !allocates(source->second->op)) continue;
    if (touches(written, in) || touches(written, out)) continue;
    // A returned copy must stay distinct from the graph's inputs and its other outputs.
    if (touches(exposed, in) && touches(exposed, out)) continue;
    replace_uses(graph, out, in);
    sets.join(out, in);
  }
  eliminate_dead_code(graph);
}

}  // namespace openneuron::compiler
