// Elementwise evaluation on host scalars through the kernel library.
#include "compiler/scalar_eval.h"

#include <stdexcept>

#include "compiler/elementwise_params.h"
#include "kernels/pointwise/cast.h"
#include "kernels/pointwise/pointwise.h"

namespace openneuron::compiler {

namespace {

kernels::TensorView scalar_view(const HostScalar& s) {
  kernels::TensorView view;
  view.data = const_cast<unsigned char*>(s.bytes);
  view.dtype = s.dtype;
  view.ndim = 0;
  return view;
}

}  // namespace

Attr HostScalar::attr() const {
  HostScalar as_wide;
  const bool floating = kernels::is_floating(dtype);
  as_wide.dtype = floating ? DType::Float64 : DType::Int64;
  kernels::copy(scalar_view(as_wide), scalar_view(*this));
  if (floating) {
    double v;
    std::memcpy(&v, as_wide.bytes, sizeof v);
    return Attr::real(v);
  }
  int64_t v;
  std::memcpy(&v, as_wide.bytes, sizeof v);
  return Attr::integer(v);
}

HostScalar host_scalar_of(const Node& scalar_node, DType dtype) {
  const Attr* value = scalar_node.attr("value");
  if (!value) throw std::invalid_argument("compiler: scalar node without a value");
  HostScalar wide;
  if (value->kind == Attr::Kind::Float) {
    wide.dtype = DType::Float64;
    std::memcpy(wide.bytes, &value->f, sizeof value->f);
  } else {
    wide.dtype = DType::Int64;
    std::memcpy(wide.bytes, &value->i, sizeof value->i);
  }
  HostScalar out;
  out.dtype = dtype;
  kernels::copy(scalar_view(out), scalar_view(wide));
  return out;
}

HostScalar evaluate_elementwise(const Node& node, const std::vector<HostScalar>& args,
                                DType out_dtype) {
  HostScalar out;
  out.dtype = out_dtype;
  std::vector<kernels::TensorView> views;
  for (const HostScalar& a : args) views.push_back(scalar_view(a));
  if (node.op == "cast") {
    kernels::copy(scalar_view(out), views.at(0));
    return out;
  }
  const ElementwiseCall call = elementwise_call(node);
  kernels::pointwise(call.op, scalar_view(out), views.data(), static_cast<int>(views.size()),
                     call.compute, call.params);
  return out;
}

}  // namespace openneuron::compiler
