#include "aten/core/tensor_views.h"

#include "aten/core/runtime_errors.h"
#include "runtime/runtime.h"

namespace openneuron::bridge {

using kernels::DType;

bool is_native_compute_dtype(at::ScalarType dtype) {
  switch (dtype) {
    case at::kBool:
    case at::kByte:
    case at::kChar:
    case at::kShort:
    case at::kInt:
    case at::kLong:
    case at::kHalf:
    case at::kBFloat16:
    case at::kFloat:
      return true;
    default:
      return false;
  }
}

bool is_wide_unsigned(at::ScalarType dtype) {
  return dtype == at::kUInt16 || dtype == at::kUInt32 || dtype == at::kUInt64;
}

kernels::DType kernel_dtype(at::ScalarType dtype) {
  switch (dtype) {
    case at::kBool:
      return DType::Bool;
    case at::kByte:
      return DType::UInt8;
    case at::kChar:
      return DType::Int8;
    case at::kShort:
      return DType::Int16;
    case at::kInt:
      return DType::Int32;
    case at::kLong:
      return DType::Int64;
    case at::kHalf:
      return DType::Float16;
    case at::kBFloat16:
      return DType::BFloat16;
    case at::kFloat:
      return DType::Float32;
    case at::kDouble:
      return DType::Float64;
    case at::kFloat8_e4m3fn:
      return DType::Float8E4M3;
    case at::kFloat8_e5m2:
      return DType::Float8E5M2;
    default:
      TORCH_CHECK(false, "neuron kernels do not support dtype ", dtype);
  }
}

kernels::TensorView view_of(const at::Tensor& tensor) {
  // PyTorch's own wording (its TensorIterator refuses more dims with the same text).
  TORCH_CHECK(tensor.dim() <= kernels::kMaxDims, "only tensors with up to ", kernels::kMaxDims,
              " dims are supported (neuron kernels; got ", tensor.dim(), ")");
  kernels::TensorView view;
  view.data = tensor.data_ptr();
  view.dtype = kernel_dtype(tensor.scalar_type());
  view.ndim = static_cast<int>(tensor.dim());
  for (int d = 0; d < view.ndim; ++d) {
    view.sizes[d] = tensor.size(d);
    view.strides[d] = tensor.stride(d);
  }
  return view;
}

kernels::TensorView elementwise_view_of(const at::Tensor& tensor) {
  if (tensor.dim() <= kernels::kMaxDims) return view_of(tensor);
  return view_of(tensor.squeeze());
}

kernels::TensorView broadcast_view(const at::Tensor& tensor, at::IntArrayRef shape) {
  TORCH_CHECK(static_cast<int64_t>(shape.size()) <= kernels::kMaxDims, "only tensors with up to ",
              kernels::kMaxDims, " dims are supported (neuron kernels; got ", shape.size(), ")");
  kernels::TensorView view;
  // Read only: a copy-on-write input stays shared (data_ptr() would copy it first).
  view.data = const_cast<void*>(tensor.const_data_ptr());
  view.dtype = kernel_dtype(tensor.scalar_type());
  view.ndim = static_cast<int>(shape.size());
  const int64_t lead = view.ndim - tensor.dim();
  for (int d = 0; d < view.ndim; ++d) {
    view.sizes[d] = shape[d];
    const int64_t source_dim = d - lead;
    const bool expanded = source_dim < 0 || tensor.size(source_dim) != shape[d];
    view.strides[d] = expanded ? 0 : tensor.stride(source_dim);
  }
  return view;
}

runtime::Stream& stream_for(const at::Tensor& tensor) {
  runtime::Stream* stream = nullptr;
  OPENNEURON_RUNTIME_CALL(stream = &runtime::current_stream(tensor.device().index()));
  return *stream;
}

}  // namespace openneuron::bridge
