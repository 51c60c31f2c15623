// Op-by-op evaluation of elementwise graphs on host tensors.
#include "compiler/reference_interpreter.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include "compiler/elementwise_params.h"
#include "compiler/gemm_epilogue.h"
#include "compiler/ops.h"
#include "compiler/scalar_eval.h"
#include "kernels/matmul/conv.h"
#include "kernels/matmul/matmul.h"
#include "kernels/pointwise/cast.h"
#include "kernels/pointwise/pointwise.h"
#include "kernels/reduce/reduce.h"
#include "kernels/reduce/reduce_general.h"

namespace openneuron::compiler {

HostTensor::HostTensor(DType dtype_, std::vector<int64_t> shape_)
    : dtype(dtype_), shape(std::move(shape_)) {
  bytes.assign(static_cast<size_t>(numel()) * kernels::element_size(dtype), 0);
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

kernels::TensorView HostTensor::view() { return broadcast_to(shape); }

kernels::TensorView HostTensor::broadcast_to(const std::vector<int64_t>& target) {
  kernels::TensorView v;
  v.data = bytes.data();
  v.dtype = dtype;
  v.ndim = static_cast<int>(target.size());
  const int lead = v.ndim - static_cast<int>(shape.size());
  if (lead < 0) throw std::invalid_argument("reference interpreter: cannot broadcast");
  int64_t stride = 1;
  for (int d = v.ndim - 1; d >= 0; --d) {
    v.sizes[d] = target[d];
    if (d < lead) {
      v.strides[d] = 0;
      continue;
    }
    const int64_t own = shape[d - lead];
    if (own != target[d] && own != 1) {
      throw std::invalid_argument("reference interpreter: shapes do not broadcast");
    }
    v.strides[d] = own == 1 ? 0 : stride;
    stride *= own;
  }
  return v;
}

namespace {

std::vector<int64_t> broadcast_shape(const std::vector<const HostTensor*>& inputs) {
  std::vector<int64_t> shape;
  for (const HostTensor* t : inputs) {
    if (t->shape.size() > shape.size())
      shape.insert(shape.begin(), t->shape.size() - shape.size(), 1);
    const size_t lead = shape.size() - t->shape.size();
    for (size_t d = 0; d < t->shape.size(); ++d) {
      if (shape[lead + d] == 1) shape[lead + d] = t->shape[d];
    }
  }
  return shape;
}

// A gemm_epilogue's product: the whole product through kernels::gemm (a matrix or a batch of
// them) or kernels::conv2d_forward, shaped as its body reads it.
HostTensor gemm_product(const Node& node, const std::vector<const HostTensor*>& args) {
  HostTensor a = *args[0];
  HostTensor b = *args[1];
  const std::string gemm = node.string_attr("gemm");
  const size_t rank = gemm == "conv" ? 4 : gemm == "bmm" ? 3 : 2;
  if (a.shape.size() != rank || b.shape.size() != rank) {
    throw std::invalid_argument("reference interpreter: gemm_epilogue operands of the wrong rank");
  }
  const bool has_bias = epilogue_operands(node) == 3 &&
                        (gemm == "conv" || (node.attr("beta") && node.attr("beta")->f != 0.0));
  HostTensor bias = has_bias ? *args[2] : HostTensor();
  HostTensor product;
  if (gemm == "conv") {
    const kernels::Conv2dParams p = conv_params_of(node);
    std::vector<int64_t> shape = {a.shape[0], b.shape[0]};
    for (int d = 0; d < 2; ++d) {
      const int64_t extent = p.dilation[d] * (b.shape[2 + d] - 1) + 1;
      shape.push_back((a.shape[2 + d] + 2 * p.padding[d] - extent) / p.stride[d] + 1);
    }
    product = HostTensor(a.dtype, shape);
    const kernels::TensorView bias_view = has_bias ? bias.view() : kernels::TensorView{};
    kernels::conv2d_forward(product.view(), a.view(), b.view(), has_bias ? &bias_view : nullptr, p);
  } else {
    std::vector<int64_t> shape = a.shape;
    shape.back() = b.shape.back();
    // The body's product dtype: the operands', or fp32 for a widened product.
    product = HostTensor(node.body->values[node.body->inputs[0]].dtype, shape);
    const Attr* alpha = node.attr("alpha");
    const double beta = has_bias ? node.attr("beta")->f : 0.0;
    const kernels::TensorView bias_view =
        has_bias ? bias.broadcast_to(shape) : kernels::TensorView{};
    kernels::gemm(product.view(), a.view(), b.view(), has_bias ? &bias_view : nullptr,
                  alpha ? alpha->f : 1.0, beta);
  }
  const Value& shaped = node.body->values[node.body->inputs[0]];
  bool known = true;
  for (const Dim& d : shaped.shape) known &= !d.is_symbolic();
  if (known) {
    product.shape.clear();
    for (const Dim& d : shaped.shape) product.shape.push_back(d.size);
  }
  return product;
}

// A reduce over a whole tensor with the kernel library's reduction (eager's own call).
HostTensor reduce_whole(const Node& node, HostTensor in, const Value& result) {
  uint32_t mask = 0;
  for (const Attr& d : node.attr("dims")->list) mask |= 1u << d.i;
  std::vector<int64_t> keepdim_shape = in.shape;
  std::vector<int64_t> shape;
  for (size_t d = 0; d < in.shape.size(); ++d) {
    if ((mask >> d) & 1u) {
      keepdim_shape[d] = 1;
      if (node.int_attr("keepdim", 0) != 0) shape.push_back(1);
    } else {
      shape.push_back(in.shape[d]);
    }
  }
  HostTensor out(result.dtype, keepdim_shape);
  const std::string fn = node.string_attr("fn");
  if (fn == "amax") {
    if (in.numel() == 0) throw std::invalid_argument("reference interpreter: amax of nothing");
    kernels::TensorView no_indices = out.view();
    no_indices.data = nullptr;
    kernels::reduce_general(kernels::GeneralReduceOp::Max, {}, out.view(), no_indices, in.view(),
                            mask);
  } else {
    kernels::reduce(fn == "sum" ? kernels::ReduceOp::Sum : kernels::ReduceOp::Mean, out.view(),
                    in.view(), mask);
  }
  out.shape = shape;
  return out;
}

}  // namespace

std::vector<HostTensor> interpret(const Graph& graph, const std::vector<HostTensor>& inputs) {
  if (inputs.size() != graph.inputs.size()) {
    throw std::invalid_argument("reference interpreter: wrong number of inputs");
  }
  std::unordered_map<int, HostTensor> env;
  for (size_t k = 0; k < inputs.size(); ++k) env[graph.inputs[k]] = inputs[k];
  for (const Node& node : graph.nodes) {
    std::vector<const HostTensor*> args;
    for (int input : node.inputs) args.push_back(&env.at(input));
    if (node.op == ops::kFused) {
      std::vector<HostTensor> body_inputs;
      for (const HostTensor* a : args) body_inputs.push_back(*a);
      std::vector<HostTensor> results = interpret(*node.body, body_inputs);
      for (size_t k = 0; k < node.outputs.size(); ++k) env[node.outputs[k]] = std::move(results[k]);
      continue;
    }
    if (node.op == ops::kGemmEpilogue) {
      std::vector<HostTensor> body_inputs = {gemm_product(node, args)};
      const size_t operands = epilogue_operands(node);
      for (size_t k = operands; k < args.size(); ++k) body_inputs.push_back(*args[k]);
      std::vector<HostTensor> results = interpret(*node.body, body_inputs);
      for (size_t k = 0; k < node.outputs.size(); ++k) env[node.outputs[k]] = std::move(results[k]);
      continue;
    }
    const DType dtype = graph.values[node.outputs[0]].dtype;
    if (node.op == ops::kScalar) {
      HostTensor t(dtype, {});
      const HostScalar s = host_scalar_of(node, dtype);
      std::copy(s.bytes, s.bytes + kernels::element_size(dtype), t.bytes.begin());
      env[node.outputs[0]] = std::move(t);
      continue;
    }
    if (node.op == ops::kReduce) {
      env[node.outputs[0]] = reduce_whole(node, *args[0], graph.values[node.outputs[0]]);
      continue;
    }
    if (node.op != ops::kPointwise && node.op != ops::kCast) {
      throw std::invalid_argument("reference interpreter: " + node.op + " is not elementwise");
    }
    HostTensor out(dtype, broadcast_shape(args));
    std::vector<kernels::TensorView> views;
    for (int input : node.inputs) views.push_back(env.at(input).broadcast_to(out.shape));
    if (node.op == ops::kCast) {
      kernels::copy(out.view(), views[0]);
    } else {
      const ElementwiseCall call = elementwise_call(node);
      kernels::pointwise(call.op, out.view(), views.data(), static_cast<int>(views.size()),
                         call.compute, call.params);
    }
    env[node.outputs[0]] = std::move(out);
  }
  std::vector<HostTensor> results;
  for (int output : graph.outputs) results.push_back(env.at(output));
  return results;
}

}  // namespace openneuron::compiler
