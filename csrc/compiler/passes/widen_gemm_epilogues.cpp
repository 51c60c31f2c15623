// Widened epilogues (not in bitwise mode): a gemm_epilogue over bf16/fp16 operands keeps the
// GEMM's fp32 result and evaluates its body in fp32, rounding to 16 bits once, where a value
// leaves the body, instead of after the product and after every op as eager does.
//
// The product is bound as fp32; every pointwise result of a 16-bit float dtype becomes fp32
// (pointwise computes 16-bit floats in fp32 already: only the stores round). A value the body
// returns, or that an explicit cast reads (the model asked for it in 16 bits, e.g. before an
// upcast), is rounded by a cast inserted after it. Casts, scalars and the other inputs stay.
// Convolution epilogues are left alone (conv2d_forward has no widened output).
#include <memory>
#include <vector>

#include "compiler/ops.h"
#include "compiler/passes/passes.h"

namespace openneuron::compiler {

namespace {

bool is_16_bit_float(DType dtype) { return dtype == DType::BFloat16 || dtype == DType::Float16; }

// The body rewritten to compute in fp32 (see above); the caller checked its product is 16-bit.
std::shared_ptr<Graph> widened_body(const Graph& body) {
  auto wide = std::make_shared<Graph>(body);
  wide->nodes.clear();
  wide->values[body.inputs[0]].dtype = DType::Float32;
  std::vector<bool> rounded_use(body.values.size(), false);  // returned or read by a cast
  for (int output : body.outputs) rounded_use[output] = true;
  for (const Node& node : body.nodes) {
    if (node.op != ops::kCast) continue;
    for (int input : node.inputs) rounded_use[input] = true;
  }
  std::vector<int> rounded(body.values.size(), -1);  // a widened value -> its 16-bit copy
  auto read = [&](int value, bool by_cast) {
    return by_cast && rounded[value] >= 0 ? rounded[value] : value;
  };
  // The product itself, when it is returned or cast, is rounded before anything else runs.
  auto round_after = [&](int value, DType dtype) {
    Value copy = body.values[value];
    copy.dtype = dtype;
    const int id = wide->add_value(copy);
    Node cast;
    cast.op = ops::kCast;
    cast.inputs = {value};
    cast.outputs = {id};
    wide->nodes.push_back(std::move(cast));
    rounded[value] = id;
  };
  const int product = body.inputs[0];
  if (rounded_use[product]) round_after(product, body.values[product].dtype);
  for (const Node& node : body.nodes) {
    Node copy = node;
    for (int& input : copy.inputs) input = read(input, node.op == ops::kCast);
    const int output = node.outputs[0];
    const DType dtype = body.values[output].dtype;
    const bool widen = node.op == ops::kPointwise && is_16_bit_float(dtype);
    if (widen) wide->values[output].dtype = DType::Float32;
    wide->nodes.push_back(std::move(copy));
    if (widen && rounded_use[output]) round_after(output, dtype);
  }
  for (int& output : wide->outputs) output = rounded[output] >= 0 ? rounded[output] : output;
  return wide;
}

}  // namespace

void widen_gemm_epilogues(Graph& graph) {
  for (Node& node : graph.nodes) {
    if (node.op != ops::kGemmEpilogue || node.string_attr("gemm") == "conv") continue;
    const Value& product = node.body->values[node.body->inputs[0]];
    if (!is_16_bit_float(product.dtype)) continue;
    node.body = widened_body(*node.body);
  }
}

}  // namespace openneuron::compiler
