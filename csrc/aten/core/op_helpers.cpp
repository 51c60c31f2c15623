#include "aten/core/op_helpers.h"

#include <ATen/ScalarOps.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include "aten/core/tensor_views.h"

namespace openneuron::bridge {

at::Tensor& assign_out(at::Tensor& out, const at::Tensor& result) {
  TORCH_CHECK(out.device() == result.device(), "Expected out tensor to have device ",
              result.device(), ", but got ", out.device(), " instead");
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

at::Tensor unaliased_input(const at::Tensor& input,
                           std::initializer_list<const at::Tensor*> outputs) {
  for (const at::Tensor* output : outputs) {
    if (output->is_alias_of(input)) return input.clone();
  }
  return input;
}

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

at::DimVector elementwise_output_strides(at::IntArrayRef shape,
                                         c10::ArrayRef<const at::Tensor*> operands) {
  const int64_t ndim = static_cast<int64_t>(shape.size());
  // Each operand's strides over the broadcast shape, 0 along broadcast dimensions; kept on the
  // stack for up to 4 operands of 8 dims, since this runs once per elementwise op.
  c10::SmallVector<at::DimVector, 4> strides;
  for (const at::Tensor* t : operands) {
    if (!t->defined()) continue;
    at::DimVector& s = strides.emplace_back(ndim, 0);
    const int64_t offset = ndim - t->dim();
    for (int64_t d = 0; d < t->dim(); ++d) {
      s[offset + d] = (t->size(d) == 1 && shape[offset + d] != 1) ? 0 : t->stride(d);
    }
  }
  // perm[0] is the fastest-moving dimension; start from row-major order.
  at::DimVector perm(ndim);
  for (int64_t k = 0; k < ndim; ++k) perm[k] = ndim - 1 - k;
  // 1: dim0 goes after dim1; -1: before; 0: undecided (TensorIterator's rule).
  auto should_swap = [&](int64_t dim0, int64_t dim1) {
    for (const auto& s : strides) {
      const int64_t s0 = s[dim0], s1 = s[dim1];
      if (s0 == 0 || s1 == 0) continue;
      if (s0 < s1) return -1;
      if (s0 > s1) return 1;
      if (shape[dim0] > shape[dim1]) return 1;
    }
    return 0;
  };
  for (int64_t i = 1; i < ndim; ++i) {
    int64_t dim1 = i;
    for (int64_t dim0 = i - 1; dim0 >= 0; --dim0) {
      const int comparison = should_swap(perm[dim0], perm[dim1]);
      if (comparison > 0) {
        std::swap(perm[dim0], perm[dim1]);
        dim1 = dim0;
      } else if (comparison < 0) {
        break;
      }
    }
  }
  at::DimVector out(ndim);
  int64_t next = 1;
  for (int64_t k = 0; k < ndim; ++k) {
    out[perm[k]] = next;
    next *= shape[perm[k]];
  }
  return out;
}

void resize_elementwise_out(at::Tensor& out, at::IntArrayRef shape,
                            c10::ArrayRef<const at::Tensor*> operands) {
  if (at::native::resize_output(out, shape)) {
    out.as_strided_(shape, elementwise_output_strides(shape, operands));
  }
}

namespace {

// True when `strides` are row-major over `shape`, size-1 dims included (TensorIterator keeps
// their strides exactly: an empty_like of the input must match an elementwise result's).
bool row_major_strides(at::IntArrayRef shape, at::IntArrayRef strides) {
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

// Every operand has the whole shape, row-major: the result is row-major too, which the
// general rule would find at several times the cost (it runs once per op).
bool all_row_major_of_shape(at::IntArrayRef shape, c10::ArrayRef<const at::Tensor*> operands) {
  bool any = false;
  for (const at::Tensor* t : operands) {
    if (!t->defined()) continue;
    if (!t->sizes().equals(shape) || !row_major_strides(shape, t->strides())) return false;
    any = true;
  }
  return any;
}

}  // namespace

at::Tensor empty_elementwise_output(at::IntArrayRef shape,
                                    c10::ArrayRef<const at::Tensor*> operands,
                                    const at::TensorOptions& options) {
  std::optional<at::DimVector> strides;  // none: row-major
  if (!all_row_major_of_shape(shape, operands)) {
    at::DimVector computed = elementwise_output_strides(shape, operands);
    if (!row_major_strides(shape, computed)) strides = std::move(computed);
  }
  if (!options.device().is_privateuseone()) {
    return strides ? at::empty_strided(shape, *strides, options) : at::empty(shape, options);
  }
  return empty_device_tensor(shape, strides ? at::OptionalIntArrayRef(*strides) : std::nullopt,
                             c10::typeMetaToScalarType(options.dtype()), options.device());
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

at::Tensor wrapped_number(const at::Scalar& value) {
  at::Tensor tensor = at::scalar_to_tensor(value);
  tensor.unsafeGetTensorImpl()->set_wrapped_number(true);
  return tensor;
}

}  // namespace openneuron::bridge
