#include "aten/op_helpers.h"

#include "aten/tensor_views.h"

namespace openneuron::bridge {

c10::Device check_same_device(const char* op, std::initializer_list<const at::Tensor*> tensors) {
  std::optional<c10::Device> device;
  std::optional<c10::Device> host;
  for (const at::Tensor* tensor : tensors) {
    if (!tensor->defined()) continue;
    if (tensor->is_privateuseone()) {
      TORCH_CHECK(!device || *device == tensor->device(),
                  "Expected all tensors to be on the same device, but found at least two devices, ",
                  *device, " and ", tensor->device(), "! (in ", op, ")");
      device = tensor->device();
    } else if (!(tensor->is_cpu() && tensor->dim() == 0)) {
      host = tensor->device();
    }
  }
  TORCH_CHECK(device.has_value(), op, ": expected at least one neuron tensor");
  TORCH_CHECK(!host,
              "Expected all tensors to be on the same device, but found at least two devices, ",
              *device, " and ", *host, "! (in ", op, ")");
  return *device;
}

bool all_native_dtypes(std::initializer_list<const at::Tensor*> tensors) {
  for (const at::Tensor* tensor : tensors) {
    if (!tensor->defined() || (tensor->is_cpu() && tensor->dim() == 0)) continue;
    if (!is_native_compute_dtype(tensor->scalar_type())) return false;
  }
  return true;
}

kernels::Scalar kernel_scalar(const at::Scalar& value) {
  if (value.isIntegral(/*includeBool=*/true)) return kernels::Scalar::from_int(value.toLong());
  return kernels::Scalar::from_double(value.toDouble());
}

Operand::Operand(const at::Tensor& tensor, at::IntArrayRef shape, at::ScalarType host_dtype) {
  on_host = !tensor.is_privateuseone();
  if (!on_host) {
    view = broadcast_view(tensor, shape);
    return;
  }
  const at::Tensor value = tensor.to(host_dtype);
  view.dtype = kernel_dtype(host_dtype);
  view.ndim = static_cast<int>(shape.size());
  for (int d = 0; d < view.ndim; ++d) {
    view.sizes[d] = shape[d];
    view.strides[d] = 0;
  }
  std::memcpy(host_value, value.data_ptr(), value.element_size());
}

}  // namespace openneuron::bridge
