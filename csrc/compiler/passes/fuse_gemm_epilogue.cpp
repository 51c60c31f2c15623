// Epilogue fusion: a fused elementwise node that reads a product nothing else reads becomes one
// gemm_epilogue node. Products: aten::mm and aten::addmm (2-D), aten::bmm (3-D), each directly or
// through one reshaping view that keeps the last dim, and aten::convolution (a 2-D convolution,
// NCHW, read directly). The runner has the library's GEMM or convolution write the product into
// an output buffer when one can hold it, then runs the body in place over it.
//
// Legality: the product and its view have that fused node as their only reader (not returned);
// the body reads the product at the body's full output shape (never broadcast); the product is
// row-major, of a matmul dtype, the operands' dtype; a view has known sizes; no impure node lies
// between the product and the fused node (the product moves down to it); the fused body does
// not end in a reduce. A convolution fuses only where eager runs it natively: not transposed,
// 4-D input and weight, bias of the input's dtype.
#include <algorithm>
#include <map>

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

// The product a node computes: operands (a, b[, bias]), alpha/beta and, for a convolution, its
// parameters; or false if it is none (or `producers` leaves its kind out).
struct Gemm {
  std::vector<int> operands;
  double alpha = 1.0;
  double beta = 0.0;
  std::string kind;
  std::map<std::string, Attr> conv;  // stride, padding, dilation, groups, bias
};

bool int_list(const Attr& a, size_t size) {
  return a.kind == Attr::Kind::List && a.list.size() == size &&
         std::all_of(a.list.begin(), a.list.end(),
                     [](const Attr& x) { return x.kind == Attr::Kind::Int; });
}

bool conv_of(const Graph& g, const std::vector<Attr>& list, Gemm* gemm) {
  // aten::convolution(input, weight, bias?, stride, padding, dilation, transposed,
  // output_padding, groups)
  if (list.size() != 9 || list[0].kind != Attr::Kind::Ref || list[1].kind != Attr::Kind::Ref ||
      !int_list(list[3], 2) || !int_list(list[4], 2) || !int_list(list[5], 2) ||
      list[6].kind != Attr::Kind::Bool || list[6].i != 0 || list[8].kind != Attr::Kind::Int ||
      list[8].i < 1) {
    return false;
  }
  const Value& input = g.values[list[0].i];
  const Value& weight = g.values[list[1].i];
  if (input.shape.size() != 4 || weight.shape.size() != 4 || weight.dtype != input.dtype) {
    return false;
  }
  *gemm = Gemm{{int(list[0].i), int(list[1].i)}, 1.0, 0.0, "conv", {}};
  if (list[2].kind == Attr::Kind::Ref) {
    if (g.values[list[2].i].dtype != input.dtype || g.values[list[2].i].shape.size() != 1) {
      return false;
    }
    gemm->operands.push_back(int(list[2].i));
  } else if (list[2].kind != Attr::Kind::None) {
    return false;
  }
  gemm->conv = {{"stride", list[3]},
                {"padding", list[4]},
                {"dilation", list[5]},
                {"groups", list[8]},
                {"bias", Attr::integer(gemm->operands.size() == 3)}};
  return true;
}

bool gemm_of(const Graph& g, const Node& node, const EpilogueProducers& producers, Gemm* gemm) {
  if (node.op != ops::kExtern || node.int_attr("impure", 0) != 0 || node.outputs.size() != 1) {
    return false;
  }
  const std::string target = node.string_attr("target");
  if (node.string_attr("overload", "default") != "default") return false;
  const Attr* args = node.attr("args");
  if (!args) return false;
  const auto& list = args->list;
  auto ref = [&](size_t k) { return list[k].kind == Attr::Kind::Ref ? int(list[k].i) : -1; };
  size_t rank = 2;
  if (producers.mm && target == "aten::mm" && list.size() == 2 && ref(0) >= 0 && ref(1) >= 0) {
    *gemm = Gemm{{ref(0), ref(1)}, 1.0, 0.0, "mm", {}};
  } else if (producers.mm && target == "aten::addmm" && list.size() == 5 && ref(0) >= 0 &&
             ref(1) >= 0 && ref(2) >= 0 && is_number(list[3]) && is_number(list[4])) {
    *gemm = Gemm{{ref(1), ref(2), ref(0)}, number_of(list[4]), number_of(list[3]), "addmm", {}};
  } else if (producers.bmm && target == "aten::bmm" && list.size() == 2 && ref(0) >= 0 &&
             ref(1) >= 0) {
    *gemm = Gemm{{ref(0), ref(1)}, 1.0, 0.0, "bmm", {}};
    rank = 3;
  } else if (producers.conv && target == "aten::convolution" && conv_of(g, list, gemm)) {
    rank = 4;
  } else {
    return false;
  }
  const Value& out = g.values[node.outputs[0]];
  const bool matmul_dtype =
      out.dtype == DType::Float32 || out.dtype == DType::BFloat16 || out.dtype == DType::Float16;
  if (out.kind != ValueKind::Tensor || out.shape.size() != rank || !matmul_dtype) return false;
  for (int operand : gemm->operands) {
    if (g.values[operand].kind != ValueKind::Tensor) return false;
  }
  if (g.values[gemm->operands[0]].dtype != out.dtype) return false;
  return is_row_major(out);
}

bool is_reshape(const Node& node) {
  const std::string target = node.string_attr("target");
  return node.op == ops::kExtern && node.outputs.size() == 1 && node.inputs.size() == 1 &&
         (target == "aten::view" || target == "aten::_unsafe_view" || target == "aten::reshape");
}

}  // namespace

void fuse_gemm_epilogue(Graph& graph, const EpilogueProducers& producers) {
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
        const size_t rank = graph.values[product].shape.size();
        if (uses[product] != 1 || defined_by[product] < 0 || !all_known(viewed.shape) ||
            !is_row_major(viewed) || viewed.shape.empty() || (rank != 2 && rank != 3) ||
            viewed.shape.back() != graph.values[product].shape.back()) {
          continue;
        }
        gemm_node = defined_by[product];
        producer = &graph.nodes[gemm_node];
      }
      Gemm gemm;
      if (!gemm_of(graph, *producer, producers, &gemm)) continue;
      if (gemm.kind == "conv" && producer != &graph.nodes[defined_by[read]]) continue;
      if (graph.values[producer->outputs[0]].dtype != bound.dtype) continue;
      if (impure_before[k] - impure_before[gemm_node + 1] != 0) continue;

      Node epilogue;
      epilogue.op = ops::kGemmEpilogue;
      epilogue.attrs["gemm"] = Attr::string(gemm.kind);
      if (gemm.kind != "conv") {
        epilogue.attrs["alpha"] = Attr::real(gemm.alpha);
        epilogue.attrs["beta"] = Attr::real(gemm.beta);
      }
      for (const auto& [name, value] : gemm.conv) epilogue.attrs[name] = value;
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
