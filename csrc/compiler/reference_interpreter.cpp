// Op-by-op evaluation of elementwise graphs on host tensors.
#include "compiler/reference_interpreter.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include "compiler/elementwise_params.h"
#include "compiler/ops.h"
#include "compiler/scalar_eval.h"
#include "kernels/pointwise/cast.h"
#include "kernels/pointwise/pointwise.h"

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
    const DType dtype = graph.values[node.outputs[0]].dtype;
    if (node.op == ops::kScalar) {
      HostTensor t(dtype, {});
      const HostScalar s = host_scalar_of(node, dtype);
      std::copy(s.bytes, s.bytes + kernels::element_size(dtype), t.bytes.begin());
      env[node.outputs[0]] = std::move(t);
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
