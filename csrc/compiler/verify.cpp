// Structural checks of the graph IR.
#include "compiler/verify.h"

#include <algorithm>
#include <vector>

#include "compiler/gemm_epilogue.h"
#include "compiler/names.h"
#include "compiler/ops.h"

namespace openneuron::compiler {

namespace {

class Verifier {
 public:
  Verifier(const Graph& g, std::string where) : g_(g), where_(std::move(where)) {}

  void run() {
    defined_.assign(g_.values.size(), false);
    for (int id : g_.inputs) define(id, -1);
    for (size_t k = 0; k < g_.nodes.size(); ++k) node(static_cast<int>(k), g_.nodes[k]);
    for (int id : g_.outputs) {
      if (id == -1) continue;
      check(id >= 0 && id < static_cast<int>(g_.values.size()) && defined_[id], -1,
            "a graph output must be a defined value (%" + std::to_string(id) + ")");
    }
  }

 private:
  void check(bool ok, int node_index, const std::string& rule) const {
    if (ok) return;
    std::string message = where_.empty() ? "IR verifier" : "IR verifier after " + where_;
    if (node_index >= 0) {
      message += ", node " + std::to_string(node_index) + " (" + g_.nodes[node_index].op + ")";
    }
    throw VerifyError(message + ": " + rule);
  }

  void define(int id, int node_index) {
    check(id >= 0 && id < static_cast<int>(g_.values.size()), node_index,
          "defines value %" + std::to_string(id) + ", which does not exist");
    check(!defined_[id], node_index, "value %" + std::to_string(id) + " is defined twice");
    defined_[id] = true;
  }

  void refs_are_inputs(const Attr& a, const Node& n, int index) const {
    if (a.kind == Attr::Kind::Ref) {
      bool found = false;
      for (int input : n.inputs) found |= input == a.i;
      for (int output : n.outputs) found |= output == a.i;
      check(found, index,
            "reference attribute %" + std::to_string(a.i) + " is neither input nor output");
    }
    for (const Attr& item : a.list) refs_are_inputs(item, n, index);
  }

  void node(int index, const Node& n) {
    for (int input : n.inputs) {
      check(input >= 0 && input < static_cast<int>(g_.values.size()) && defined_[input], index,
            "reads value %" + std::to_string(input) + " before it is defined");
    }
    for (const auto& entry : n.attrs) refs_are_inputs(entry.second, n, index);
    if (n.op == ops::kPointwise) {
      PointwiseOp op;
      check(parse_pointwise_op(n.string_attr("fn"), &op), index,
            "pointwise needs a known fn (got '" + n.string_attr("fn") + "')");
      DType compute;
      check(parse_dtype(n.string_attr("compute"), &compute), index,
            "pointwise needs a compute dtype");
      check(static_cast<int>(n.inputs.size()) == kernels::pointwise_arity(op), index,
            "pointwise " + n.string_attr("fn") + " takes " +
                std::to_string(kernels::pointwise_arity(op)) + " inputs");
      check(n.outputs.size() == 1, index, "pointwise defines one value");
      tensors(n, index);
    } else if (n.op == ops::kCast) {
      check(n.inputs.size() == 1 && n.outputs.size() == 1, index, "cast maps one value to one");
      tensors(n, index);
    } else if (n.op == ops::kScalar) {
      check(n.inputs.empty() && n.outputs.size() == 1 && n.attr("value"), index,
            "scalar takes no inputs and has a value");
    } else if (n.op == ops::kFused) {
      fused(index, n);
    } else if (n.op == ops::kGemmEpilogue) {
      gemm_epilogue(index, n);
    } else if (n.op == ops::kReduce) {
      reduce(index, n);
    } else if (n.op == ops::kExtern) {
      check(!n.string_attr("target").empty(), index, "extern needs a target");
    } else if (n.op == ops::kSym) {
      check(n.outputs.size() == 1 && g_.values[n.outputs[0]].kind == ValueKind::Int, index,
            "sym defines one int");
    } else {
      check(false, index, "unknown op");
    }
    for (int output : n.outputs) define(output, index);
  }

  void tensors(const Node& n, int index) const {
    for (int id : n.inputs) {
      check(g_.values[id].kind == ValueKind::Tensor, index,
            "elementwise inputs are tensors (%" + std::to_string(id) + " is not)");
    }
    check(g_.values[n.outputs[0]].kind == ValueKind::Tensor, index,
          "elementwise results are tensors");
  }

  void fused(int index, const Node& n) const {
    check(n.body != nullptr, index, "fused needs a body");
    check(n.body->inputs.size() == n.inputs.size(), index, "fused body binds one input per input");
    elementwise_body(index, n);
  }

  void gemm_epilogue(int index, const Node& n) const {
    const std::string gemm = n.string_attr("gemm");
    check(gemm == "mm" || gemm == "addmm" || gemm == "bmm" || gemm == "conv", index,
          "gemm_epilogue needs gemm=\"mm\", \"addmm\", \"bmm\" or \"conv\"");
    const size_t operands = epilogue_operands(n);
    check(n.inputs.size() >= operands, index, "gemm_epilogue reads its product's operands first");
    check(n.body != nullptr, index, "gemm_epilogue needs a body");
    const Graph& body = *n.body;
    check(!body.inputs.empty() && body.inputs.size() == n.inputs.size() - operands + 1, index,
          "gemm_epilogue body binds the product, then one input per input after the operands");
    const Value& a = g_.values[n.inputs[0]];
    const Value& b = g_.values[n.inputs[1]];
    const Value& product = body.values[body.inputs[0]];
    const size_t rank = gemm == "conv" ? 4 : gemm == "bmm" ? 3 : 2;
    check(a.shape.size() == rank && b.shape.size() == rank && a.dtype == b.dtype, index,
          "gemm_epilogue's operands have its product's rank and one dtype");
    if (gemm == "conv") {
      for (const char* list : {"stride", "padding", "dilation"}) {
        const Attr* attr = n.attr(list);
        check(attr && attr->kind == Attr::Kind::List && attr->list.size() == 2, index,
              std::string("a conv epilogue needs a 2-element ") + list);
      }
      check(n.int_attr("groups", 0) >= 1, index, "a conv epilogue needs groups >= 1");
      check(product.dtype == a.dtype && product.shape.size() == 4 &&
                product.shape[0] == a.shape[0] && product.shape[1] == b.shape[0],
            index, "a conv epilogue's product is [N, O, OH, OW] of the operands' dtype");
    } else {
      // A widened product keeps the fp32 accumulator of 16-bit operands (not in bitwise mode).
      const bool widened =
          product.dtype == kernels::DType::Float32 &&
          (a.dtype == kernels::DType::BFloat16 || a.dtype == kernels::DType::Float16);
      check((product.dtype == a.dtype || widened) && !product.shape.empty() &&
                product.shape.back() == b.shape[rank - 1],
            index,
            "gemm_epilogue's product has the operands' dtype (or fp32 for 16-bit operands) and "
            "the last dim of y");
      const bool known = std::none_of(product.shape.begin(), product.shape.end(),
                                      [](const Dim& d) { return d.is_symbolic(); });
      check(known || product.shape.size() == rank, index,
            "a gemm_epilogue product read through a reshape has known sizes");
    }
    elementwise_body(index, n);
    check(product.shape == body.values[body.outputs[0]].shape, index,
          "gemm_epilogue's body reads the product at its output shape");
  }

  void reduce(int index, const Node& n) const {
    const std::string fn = n.string_attr("fn");
    check(fn == "sum" || fn == "mean" || fn == "amax", index,
          "reduce needs fn=\"sum\", \"mean\" or \"amax\" (got '" + fn + "')");
    check(n.inputs.size() == 1 && n.outputs.size() == 1, index, "reduce maps one value to one");
    tensors(n, index);
    const Value& in = g_.values[n.inputs[0]];
    const Value& out = g_.values[n.outputs[0]];
    check(in.dtype == out.dtype && kernels::is_floating(in.dtype), index,
          "reduce keeps its input's floating dtype");
    const Attr* dims = n.attr("dims");
    check(dims && dims->kind == Attr::Kind::List && !dims->list.empty(), index,
          "reduce needs a non-empty dims list");
    const bool keepdim = n.int_attr("keepdim", 0) != 0;
    std::vector<Dim> expected;
    size_t next = 0;
    int64_t previous = -1;
    for (const Attr& d : dims->list) {
      check(d.kind == Attr::Kind::Int && d.i > previous && d.i < int64_t(in.shape.size()), index,
            "reduce dims are ascending dims of its input");
      previous = d.i;
    }
    for (size_t d = 0; d < in.shape.size(); ++d) {
      const bool reduced = next < dims->list.size() && dims->list[next].i == int64_t(d);
      if (reduced) ++next;
      if (!reduced) expected.push_back(in.shape[d]);
      if (reduced && keepdim) expected.push_back(Dim::known(1));
    }
    check(out.shape == expected, index, "reduce's result has its input's shape less the dims");
  }

  // The body rules shared by fused and gemm_epilogue nodes.
  void elementwise_body(int index, const Node& n) const {
    const Graph& body = *n.body;
    check(body.outputs.size() == n.outputs.size() && !n.outputs.empty(), index,
          "fused body defines the node's outputs");
    int reduce_output = -1;
    for (size_t k = 0; k < body.nodes.size(); ++k) {
      const Node& inner = body.nodes[k];
      const bool last_reduce =
          inner.op == ops::kReduce && k + 1 == body.nodes.size() && n.op == ops::kFused;
      check(ops::is_elementwise(inner.op) || last_reduce, index,
            "fused body holds elementwise ops and at most one final reduce, not " + inner.op);
      if (inner.op == ops::kReduce) reduce_output = inner.outputs[0];
    }
    // The iteration shape: a final reduce's input, else the first output's shape.
    const std::vector<Dim>* shape = nullptr;
    for (size_t k = 0; k < body.outputs.size(); ++k) {
      check(body.outputs[k] >= 0, index, "fused outputs are values");
      const Value& inner = body.values[body.outputs[k]];
      const Value& outer = g_.values[n.outputs[k]];
      check(inner.dtype == outer.dtype && inner.shape == outer.shape, index,
            "fused body output " + std::to_string(k) + " differs in dtype or shape");
      if (!shape) {
        shape = reduce_output >= 0 ? &body.values[body.nodes.back().inputs[0]].shape : &inner.shape;
      }
      check(body.outputs[k] == reduce_output || inner.shape == *shape, index,
            "fused outputs have one shape (a final reduce's result aside)");
    }
    check(reduce_output < 0 ||
              std::count(body.outputs.begin(), body.outputs.end(), reduce_output) == 1,
          index, "a fused body returns its final reduce's result");
    verify(body, where_.empty() ? "fused body" : where_ + " (fused body)");
  }

  const Graph& g_;
  const std::string where_;
  std::vector<bool> defined_;
};

}  // namespace

void verify(const Graph& graph, const std::string& where) { Verifier(graph, where).run(); }

}  // namespace openneuron::compiler
