// GEMM epilogue fusion: a fused elementwise node that reads a matrix product (aten::mm or
// aten::addmm, directly or through one reshaping view) that nothing else reads becomes one
// gemm_epilogue node. Its runner computes the product panel by panel and applies the body to
// each panel while it is in cache, so the full product is never stored or read back.
//
// Legality: the product and its view have that fused node as their only reader (not returned);
// the body reads the product at the body's full output shape (never broadcast); the product is
// 2-D, row-major, of a matmul dtype; a view keeps the product's last dim and has known sizes;
// no impure node lies between the product and the fused node (the GEMM moves down to it); the
// fused body does not end in a reduce.
#include <algorithm>

#include "compiler/ops.h"
#include "compiler/passes/passes.h"

namespace openneuron::compiler {

namespace {

bool is_row_major(const Value& v) {
  for (size_t d = 0; d < v.dim_order.size(); ++d) {
    if (v.dim_order[d] != static_cast<int>(d)) return false;
  }
  return true;
}

bool all_known(const std::vector<Dim>& shape) {
  return std::none_of(shape.begin(), shape.end(), [](const Dim& d) { return d.is_symbolic(); });
}

bool is_number(const Attr& a) { return a.kind == Attr::Kind::Int || a.kind == Attr::Kind::Float; }

double number_of(const Attr& a) { return a.kind == Attr::Kind::Float ? a.f : double(a.i); }

// The GEMM a node computes: operands (a, b[, bias]) and alpha/beta, or false if it is none.
struct Gemm {
  std::vector<int> operands;
  double alpha = 1.0;
  double beta = 0.0;
  std::string kind;
};

bool gemm_of(const Graph& g, const Node& node, Gemm* gemm) {
  if (node.op != ops::kExtern || node.int_attr("impure", 0) != 0 || node.outputs.size() != 1) {
    return false;
  }
  const std::string target = node.string_attr("target");
  if (node.string_attr("overload", "default") != "default") return false;
  const Attr* args = node.attr("args");
  if (!args) return false;
  const auto& list = args->list;
  auto ref = [&](size_t k) { return list[k].kind == Attr::Kind::Ref ? int(list[k].i) : -1; };
  if (target == "aten::mm" && list.size() == 2 && ref(0) >= 0 && ref(1) >= 0) {
    *gemm = Gemm{{ref(0), ref(1)}, 1.0, 0.0, "mm"};
  } else if (target == "aten::addmm" && list.size() == 5 && ref(0) >= 0 && ref(1) >= 0 &&
             ref(2) >= 0 && is_number(list[3]) && is_number(list[4])) {
    *gemm = Gemm{{ref(1), ref(2), ref(0)}, number_of(list[4]), number_of(list[3]), "addmm"};
  } else {
    return false;
  }
  const Value& out = g.values[node.outputs[0]];
  const bool matmul_dtype =
      out.dtype == DType::Float32 || out.dtype == DType::BFloat16 || out.dtype == DType::Float16;
  if (out.kind != ValueKind::Tensor || out.shape.size() != 2 || !matmul_dtype) return false;
  for (int operand : gemm->operands) {
    if (g.values[operand].kind != ValueKind::Tensor) return false;
  }
  return is_row_major(out);
}

bool is_reshape(const Node& node) {
  const std::string target = node.string_attr("target");
  return node.op == ops::kExtern && node.outputs.size() == 1 && node.inputs.size() == 1 &&
         (target == "aten::view" || target == "aten::_unsafe_view" || target == "aten::reshape");
}

}  // namespace

void fuse_gemm_epilogue(Graph& graph) {
  const std::vector<int> uses = use_counts(graph);
  std::vector<int> defined_by(graph.values.size(), -1);
  for (size_t k = 0; k < graph.nodes.size(); ++k) {
    for (int output : graph.nodes[k].outputs) defined_by[output] = static_cast<int>(k);
  }
  std::vector<int> impure_before(graph.nodes.size() + 1, 0);  // impure nodes in [0, k)
  for (size_t k = 0; k < graph.nodes.size(); ++k) {
    impure_before[k + 1] = impure_before[k] + (graph.nodes[k].int_attr("impure", 0) != 0);
  }
  bool changed = false;
  for (size_t k = 0; k < graph.nodes.size(); ++k) {
    Node& fused = graph.nodes[k];
    if (fused.op != ops::kFused) continue;
    const Graph& body = *fused.body;
    if (body.nodes.back().op == ops::kReduce) continue;  // an epilogue is elementwise only
    const std::vector<Dim>& out_shape = body.values[body.outputs[0]].shape;
    for (size_t j = 0; j < fused.inputs.size(); ++j) {
      const int read = fused.inputs[j];
      const Value& bound = body.values[body.inputs[j]];
      if (uses[read] != 1 || bound.shape != out_shape || defined_by[read] < 0) continue;
      int gemm_node = defined_by[read];
      const Node* producer = &graph.nodes[gemm_node];
      if (is_reshape(*producer)) {
        const Value& viewed = graph.values[read];
        const int product = producer->inputs[0];
        if (uses[product] != 1 || defined_by[product] < 0 || !all_known(viewed.shape) ||
            !is_row_major(viewed) || viewed.shape.empty() ||
            graph.values[product].shape.size() != 2 ||
            viewed.shape.back() != graph.values[product].shape.back()) {
          continue;
        }
        gemm_node = defined_by[product];
        producer = &graph.nodes[gemm_node];
      }
      Gemm gemm;
      if (!gemm_of(graph, *producer, &gemm)) continue;
      if (graph.values[producer->outputs[0]].dtype != bound.dtype) continue;
      if (impure_before[k] - impure_before[gemm_node + 1] != 0) continue;

      Node epilogue;
      epilogue.op = ops::kGemmEpilogue;
      epilogue.attrs["gemm"] = Attr::string(gemm.kind);
      epilogue.attrs["alpha"] = Attr::real(gemm.alpha);
      epilogue.attrs["beta"] = Attr::real(gemm.beta);
      if (const Attr* src = fused.attr("src")) epilogue.attrs["src"] = *src;
      epilogue.inputs = gemm.operands;
      auto new_body = std::make_shared<Graph>(body);
      new_body->inputs.clear();
      new_body->inputs.push_back(body.inputs[j]);  // the product comes first
      for (size_t i = 0; i < fused.inputs.size(); ++i) {
        if (i == j) continue;
        epilogue.inputs.push_back(fused.inputs[i]);
        new_body->inputs.push_back(body.inputs[i]);
      }
      epilogue.body = std::move(new_body);
      epilogue.outputs = fused.outputs;
      fused = std::move(epilogue);
      changed = true;
      break;
    }
  }
  // The product (and its view) now has no reader.
  if (changed) eliminate_dead_code(graph);
}

}  // namespace openneuron::compiler
