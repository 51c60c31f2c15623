// Memory planning: when each value can be released, which fused outputs may be written into a
// dying input's buffer, and which output of a GEMM epilogue holds its product.
#include <unordered_set>

#include "compiler/ops.h"
#include "compiler/passes/passes.h"

namespace openneuron::compiler {

namespace {

// True when the fused body reads body input `input` only at or before the node that defines
// body output `output` (so writing the output in place never overwrites an unread element).
bool reads_before_write(const Graph& body, int input, int output) {
  int last_read = -1, write = -1;
  for (size_t k = 0; k < body.nodes.size(); ++k) {
    const Node& node = body.nodes[k];
    for (int in : node.inputs) {
      if (in == input) last_read = static_cast<int>(k);
    }
    for (int out : node.outputs) {
      if (out == output) write = static_cast<int>(k);
    }
  }
  return write >= 0 && last_read <= write;
}

void plan_reuse(const Graph& graph, Node& node, const std::unordered_set<int>& dying,
                const std::unordered_set<int>& graph_inputs) {
  std::vector<Attr> pairs;
  std::unordered_set<size_t> taken;
  for (size_t out = 0; out < node.outputs.size(); ++out) {
    const Value& o = graph.values[node.outputs[out]];
    for (size_t in = 0; in < node.inputs.size(); ++in) {
      const int value = node.inputs[in];
      if (taken.count(in) || !dying.count(value) || graph_inputs.count(value)) continue;
      const Value& i = graph.values[value];
      if (i.kind != ValueKind::Tensor || i.dtype != o.dtype || i.shape != o.shape ||
          i.dim_order != o.dim_order) {
        continue;
      }
      if (!reads_before_write(*node.body, node.body->inputs[in], node.body->outputs[out])) {
        continue;
      }
      taken.insert(in);
      pairs.push_back(Attr::integer(static_cast<int64_t>(out)));
      pairs.push_back(Attr::integer(static_cast<int64_t>(in)));
      break;
    }
  }
  if (pairs.empty()) {
    node.attrs.erase("reuse");
  } else {
    node.attrs["reuse"] = Attr::of_list(std::move(pairs));
  }
}

bool is_row_major(const Value& v) {
  for (size_t d = 0; d < v.dim_order.size(); ++d) {
    if (v.dim_order[d] != static_cast<int>(d)) return false;
  }
  return true;
}

// A gemm_epilogue's product goes into the first output that can hold it: same dtype and shape,
// row-major, written no earlier than the body's last read of the product.
void plan_product(const Graph& graph, Node& node) {
  node.attrs.erase("product_into");
  const Graph& body = *node.body;
  const Value& product = body.values[body.inputs[0]];
  for (size_t out = 0; out < node.outputs.size(); ++out) {
    const Value& o = graph.values[node.outputs[out]];
    if (o.dtype != product.dtype || o.shape != product.shape || !is_row_major(o)) continue;
    if (!reads_before_write(body, body.inputs[0], body.outputs[out])) continue;
    node.attrs["product_into"] = Attr::integer(static_cast<int64_t>(out));
    return;
  }
}

}  // namespace

void plan_memory(Graph& graph) {
  std::unordered_set<int> returned(graph.outputs.begin(), graph.outputs.end());
  std::unordered_set<int> graph_inputs(graph.inputs.begin(), graph.inputs.end());
  std::vector<int> last_reader(graph.values.size(), -1);
  for (size_t k = 0; k < graph.nodes.size(); ++k) {
    for (int input : graph.nodes[k].inputs) last_reader[input] = static_cast<int>(k);
  }
  for (size_t k = 0; k < graph.nodes.size(); ++k) {
    Node& node = graph.nodes[k];
    std::vector<Attr> freed;
    std::unordered_set<int> dying;
    std::unordered_set<int> listed;
    for (int input : node.inputs) {
      if (last_reader[input] == static_cast<int>(k) && !returned.count(input) &&
          listed.insert(input).second) {
        freed.push_back(Attr::ref(input));
        dying.insert(input);
      }
    }
    for (int output : node.outputs) {
      if (last_reader[output] < 0 && !returned.count(output)) freed.push_back(Attr::ref(output));
    }
    if (freed.empty()) {
      node.attrs.erase("free");
    } else {
      node.attrs["free"] = Attr::of_list(std::move(freed));
    }
    const bool reduces =
        node.body && !node.body->nodes.empty() && node.body->nodes.back().op == ops::kReduce;
    if (node.op == ops::kFused && !reduces) plan_reuse(graph, node, dying, graph_inputs);
    if (node.op == ops::kGemmEpilogue) plan_product(graph, node);
  }
}

}  // namespace openneuron::compiler
