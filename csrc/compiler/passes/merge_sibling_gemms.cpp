// Sibling GEMMs (not in bitwise mode): linear layers that read one input, such as the q/k/v
// projections of attention or the gate and up projections of a SwiGLU MLP, run as one GEMM over
// their weights concatenated along the output features; each layer's result is a column slice
// of the merged product. One call packs the input once and gives the library a wider product.
//
// A sibling is aten::mm(a, t(W)) or aten::addmm(bias, a, t(W), 1, 1) (t: aten::t, or
// aten::permute(W, [1, 0])) with W [N, K] and bias [N] graph inputs of a's dtype (weights and
// biases, so the concatenation is cached: `cached=1` lets the program runner keep it while every
// weight is the same tensor at the same version), or with W = cast(G) of a graph input G (as
// autocast casts fp32 weights to bf16): then the G are concatenated (cached), the concatenation
// is cast once, and every use of each W reads its row slice of that cast. Siblings of one group
// share a, the kind (mm or addmm), the dtype, K and the weights' source dtype, and no impure node
// lies between the first and the last of them (the merged product is computed where the first
// one was; a cast weight's concatenation where the first weight cast was).
#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "compiler/ops.h"
#include "compiler/passes/passes.h"

namespace openneuron::compiler {

namespace {

struct Sibling {
  size_t node = 0;
  int weight = -1;  // W [N, K], a graph input, or the graph input cast to W
  int cast = -1;    // the value W when it is cast(weight), else -1
  int bias = -1;    // addmm's bias [N], a graph input
  int64_t features = 0;
};

// Where a sibling's weight comes from: a graph input, directly or through one cast.
struct WeightSource {
  int input = -1;
  int cast = -1;
};

bool is_one(const Attr& a) {
  return (a.kind == Attr::Kind::Int && a.i == 1) || (a.kind == Attr::Kind::Float && a.f == 1.0);
}

Node extern_node(const std::string& target, std::vector<Attr> args, std::vector<int> inputs,
                 int output, const Node& like) {
  Node node;
  node.op = ops::kExtern;
  node.attrs["target"] = Attr::string(target);
  node.attrs["overload"] = Attr::string("default");
  node.attrs["args"] = Attr::of_list(std::move(args));
  if (const Attr* src = like.attr("src")) node.attrs["src"] = *src;
  node.inputs = std::move(inputs);
  node.outputs = {output};
  return node;
}

}  // namespace

void merge_sibling_gemms(Graph& graph) {
  std::vector<bool> graph_input(graph.values.size(), false);
  for (int input : graph.inputs) graph_input[input] = true;
  std::vector<int> defined_by(graph.values.size(), -1);
  for (size_t k = 0; k < graph.nodes.size(); ++k) {
    for (int output : graph.nodes[k].outputs) defined_by[output] = static_cast<int>(k);
  }
  // The source of W in b = t(W) (input -1 when there is none).
  auto transposed_weight = [&](int b) {
    WeightSource none;
    if (defined_by[b] < 0) return none;
    const Node& t = graph.nodes[defined_by[b]];
    const Attr* args = t.attr("args");
    if (t.op != ops::kExtern || !args || args->list.empty() ||
        args->list[0].kind != Attr::Kind::Ref ||
        t.string_attr("overload", "default") != "default") {
      return none;
    }
    const std::string target = t.string_attr("target");
    const bool transpose =
        (target == "aten::t" && args->list.size() == 1) ||
        (target == "aten::permute" && args->list.size() == 2 &&
         args->list[1].kind == Attr::Kind::List && args->list[1].list.size() == 2 &&
         args->list[1].list[0].i == 1 && args->list[1].list[1].i == 0);
    WeightSource source{static_cast<int>(args->list[0].i), -1};
    const int producer = defined_by[source.input];
    if (producer >= 0 && graph.nodes[producer].op == ops::kCast) {
      source = {graph.nodes[producer].inputs[0], source.input};
    }
    const Value& w = graph.values[source.input];
    const bool known =
        w.shape.size() == 2 && !w.shape[0].is_symbolic() && !w.shape[1].is_symbolic();
    return transpose && graph_input[source.input] && known ? source : none;
  };
  // Groups keyed by (a, kind, dtype, K, source dtype or -1), siblings in program order.
  std::map<std::tuple<int, bool, int, int64_t, int>, std::vector<Sibling>> groups;
  for (size_t k = 0; k < graph.nodes.size(); ++k) {
    const Node& node = graph.nodes[k];
    const Attr* args = node.attr("args");
    if (node.op != ops::kExtern || node.int_attr("impure", 0) != 0 || !args ||
        node.outputs.size() != 1 || node.string_attr("overload", "default") != "default") {
      continue;
    }
    const std::string target = node.string_attr("target");
    const auto& list = args->list;
    const bool addmm = target == "aten::addmm" && list.size() == 5 && is_one(list[3]) &&
                       is_one(list[4]) && list[0].kind == Attr::Kind::Ref;
    const size_t first = addmm ? 1 : 0;
    if (!addmm && !(target == "aten::mm" && list.size() == 2)) continue;
    if (list[first].kind != Attr::Kind::Ref || list[first + 1].kind != Attr::Kind::Ref) continue;
    const int a = static_cast<int>(list[first].i);
    const WeightSource source = transposed_weight(static_cast<int>(list[first + 1].i));
    if (source.input < 0) continue;
    const Value& w = graph.values[source.cast >= 0 ? source.cast : source.input];
    const Value& out = graph.values[node.outputs[0]];
    const Value& left = graph.values[a];
    const bool float_dtype =
        out.dtype == DType::Float32 || out.dtype == DType::BFloat16 || out.dtype == DType::Float16;
    if (!float_dtype || w.dtype != out.dtype || left.dtype != out.dtype || left.shape.size() != 2 ||
        out.shape.size() != 2) {
      continue;
    }
    Sibling sibling{k, source.input, source.cast, -1, w.shape[0].size};
    if (addmm) {
      sibling.bias = static_cast<int>(list[0].i);
      const Value& bias = graph.values[sibling.bias];
      if (!graph_input[sibling.bias] || bias.dtype != out.dtype || bias.shape.size() != 1 ||
          bias.shape[0] != w.shape[0]) {
        continue;
      }
    }
    const int source_dtype =
        source.cast >= 0 ? static_cast<int>(graph.values[source.input].dtype) : -1;
    groups[{a, addmm, static_cast<int>(out.dtype), w.shape[1].size, source_dtype}].push_back(
        sibling);
  }

  std::vector<int> impure_before(graph.nodes.size() + 1, 0);  // impure nodes in [0, k)
  for (size_t k = 0; k < graph.nodes.size(); ++k) {
    impure_before[k + 1] = impure_before[k] + (graph.nodes[k].int_attr("impure", 0) != 0);
  }
  std::map<size_t, std::vector<Node>> inserted_before;  // node index -> new nodes before it
  std::vector<bool> removed(graph.nodes.size(), false);
  int merged = 0;
  for (auto& [key, siblings] : groups) {
    if (siblings.size() < 2) continue;
    const auto [a, addmm, dtype, depth, source_dtype] = key;
    const size_t first = siblings.front().node;
    const size_t last = siblings.back().node;
    size_t weights_at = first;  // where the weights' concatenation goes
    for (const Sibling& s : siblings) {
      if (s.cast >= 0) weights_at = std::min(weights_at, static_cast<size_t>(defined_by[s.cast]));
    }
    if (impure_before[last] - impure_before[weights_at] != 0) continue;
    const Node& like = graph.nodes[first];
    int64_t total = 0;
    std::vector<Attr> weights, biases;
    std::vector<int> weight_ids, bias_ids;
    for (const Sibling& s : siblings) {
      total += s.features;
      weights.push_back(Attr::ref(s.weight));
      weight_ids.push_back(s.weight);
      if (addmm) {
        biases.push_back(Attr::ref(s.bias));
        bias_ids.push_back(s.bias);
      }
    }
    std::vector<Node> weight_nodes, nodes;
    auto tensor = [&](std::vector<Dim> shape, std::vector<int> order = {}, int of = -1) {
      Value v;
      v.dtype = static_cast<DType>(of >= 0 ? of : dtype);
      v.shape = std::move(shape);
      v.dim_order = std::move(order);
      return graph.add_value(std::move(v));
    };
    int cat = tensor({Dim::known(total), Dim::known(depth)}, {}, source_dtype);
    weight_nodes.push_back(extern_node("aten::cat", {Attr::of_list(weights), Attr::integer(0)},
                                       weight_ids, cat, like));
    weight_nodes.back().attrs["cached"] = Attr::integer(1);
    if (source_dtype >= 0) {
      // The weights were cast one by one: cast the concatenation once, and let every reader of
      // a weight's cast read its rows of it instead.
      const int cast = tensor({Dim::known(total), Dim::known(depth)});
      Node node;
      node.op = ops::kCast;
      node.inputs = {cat};
      node.outputs = {cast};
      if (const Attr* src = like.attr("src")) node.attrs["src"] = *src;
      weight_nodes.push_back(std::move(node));
      cat = cast;
      int64_t row = 0;
      for (const Sibling& s : siblings) {
        const int rows = tensor({Dim::known(s.features), Dim::known(depth)});
        Node slice = extern_node("aten::slice",
                                 {Attr::ref(cast), Attr::integer(0), Attr::integer(row),
                                  Attr::integer(row + s.features), Attr::integer(1)},
                                 {cast}, rows, like);
        slice.attrs["overload"] = Attr::string("Tensor");
        slice.attrs["view"] = Attr::integer(1);
        weight_nodes.push_back(std::move(slice));
        replace_uses(graph, s.cast, rows);
        row += s.features;
      }
    }
    const int transposed = tensor({Dim::known(depth), Dim::known(total)}, {1, 0});
    nodes.push_back(extern_node("aten::t", {Attr::ref(cat)}, {cat}, transposed, like));
    nodes.back().attrs["view"] = Attr::integer(1);
    const Dim rows = graph.values[a].shape[0];
    const int product = tensor({rows, Dim::known(total)});
    if (addmm) {
      const int bias = tensor({Dim::known(total)});
      nodes.push_back(extern_node("aten::cat", {Attr::of_list(biases), Attr::integer(0)}, bias_ids,
                                  bias, like));
      nodes.back().attrs["cached"] = Attr::integer(1);
      nodes.push_back(extern_node("aten::addmm",
                                  {Attr::ref(bias), Attr::ref(a), Attr::ref(transposed),
                                   Attr::integer(1), Attr::integer(1)},
                                  {bias, a, transposed}, product, like));
    } else {
      nodes.push_back(extern_node("aten::mm", {Attr::ref(a), Attr::ref(transposed)},
                                  {a, transposed}, product, like));
    }
    nodes.back().attrs["merged"] = Attr::integer(static_cast<int64_t>(siblings.size()));
    int64_t offset = 0;
    for (const Sibling& s : siblings) {
      Node slice = extern_node("aten::slice",
                               {Attr::ref(product), Attr::integer(1), Attr::integer(offset),
                                Attr::integer(offset + s.features), Attr::integer(1)},
                               {product}, graph.nodes[s.node].outputs[0], graph.nodes[s.node]);
      slice.attrs["overload"] = Attr::string("Tensor");
      slice.attrs["view"] = Attr::integer(1);
      nodes.push_back(std::move(slice));
      offset += s.features;
      removed[s.node] = true;
    }
    auto& before_weights = inserted_before[weights_at];
    for (Node& node : weight_nodes) before_weights.push_back(std::move(node));
    auto& before_first = inserted_before[first];
    for (Node& node : nodes) before_first.push_back(std::move(node));
    ++merged;
  }
  if (merged == 0) return;
  std::vector<Node> rewritten;
  for (size_t k = 0; k < graph.nodes.size(); ++k) {
    const auto found = inserted_before.find(k);
    if (found != inserted_before.end()) {
      for (Node& node : found->second) rewritten.push_back(std::move(node));
    }
    if (!removed[k]) rewritten.push_back(std::move(graph.nodes[k]));
  }
  graph.nodes = std::move(rewritten);
  eliminate_dead_code(graph);  // transposes (and casts) of merged weights nothing else reads
}

}  // namespace openneuron::compiler
