// Sum and mean over dimensions on the device.
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/sum.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/ops.h"
#include "kernels/reduce/reduce.h"

namespace openneuron::bridge {

namespace {

// Bit d set when dim d is reduced; no dims (or an empty list) reduces all of them.
uint32_t reduced_dims(const at::Tensor& self, at::OptionalIntArrayRef dim) {
  const int64_t ndim = self.dim();
  if (!dim.has_value() || dim->empty())
    return ndim == 0 ? 0u : (ndim >= 32 ? ~0u : (1u << ndim) - 1);
  const auto bits = at::dim_list_to_bitset(*dim, ndim);
  uint32_t mask = 0;
  for (int64_t d = 0; d < ndim; ++d) {
    if (bits[d]) mask |= 1u << d;
  }
  return mask;
}

std::vector<int64_t> reduced_shape(const at::Tensor& self, uint32_t mask, bool keepdim) {
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!(mask & (1u << d)))
      shape.push_back(self.size(d));
    else if (keepdim)
      shape.push_back(1);
  }
  return shape;
}

at::ScalarType sum_result_type(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  if (dtype) return *dtype;
  return at::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? at::kLong
                                                                      : self.scalar_type();
}

// Reduces self into out (already sized for keepdim or not), in stream order.
void launch_reduce(const char* name, kernels::ReduceOp op, const at::Tensor& self, uint32_t mask,
                   const at::Tensor& out) {
  if (out.numel() == 0) return;
  // The kernel wants out in keepdim layout: re-insert the reduced dims as size-1 views.
  at::Tensor keepdim_out = out;
  if (out.dim() != self.dim()) {
    for (int64_t d = 0; d < self.dim(); ++d) {
      if (mask & (1u << d)) keepdim_out = keepdim_out.unsqueeze(d);
    }
  }
  const kernels::TensorView out_view = view_of(keepdim_out);
  const kernels::TensorView in_view = view_of(self);
  stream_for(out).enqueue(
      name, [op, out_view, in_view, mask] { kernels::reduce(op, out_view, in_view, mask); });
}

bool reduce_is_native(const at::Tensor& self, at::ScalarType result) {
  return self.dim() <= 31 && all_native_dtypes({&self}) && is_native_compute_dtype(result);
}

}  // namespace

at::Tensor& sum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype, at::Tensor& out) {
  if (!reduce_is_native(self, out.scalar_type())) {
    return OPENNEURON_FALLBACK(sum_IntList_out, self, dim, keepdim, dtype, out);
  }
  OPENNEURON_NATIVE_OP("aten::sum.IntList_out");
  check_same_device("aten::sum.IntList_out", {&self, &out});
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = reduced_dims(self, dim);
  at::native::resize_output(out, reduced_shape(self, mask, keepdim));
  launch_reduce("aten::sum", kernels::ReduceOp::Sum, self, mask, out);
  return out;
}

at::Tensor sum_dim(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<at::ScalarType> dtype) {
  const at::ScalarType result = sum_result_type(self, dtype);
  if (!reduce_is_native(self, result)) {
    return OPENNEURON_FALLBACK(sum_dim_IntList, self, dim, keepdim, dtype);
  }
  OPENNEURON_NATIVE_OP("aten::sum.dim_IntList");
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = reduced_dims(self, dim);
  at::Tensor out = at::empty(reduced_shape(self, mask, keepdim), self.options().dtype(result));
  launch_reduce("aten::sum", kernels::ReduceOp::Sum, self, mask, out);
  return out;
}

at::Tensor& mean_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                     std::optional<at::ScalarType> dtype, at::Tensor& out) {
  if (!reduce_is_native(self, out.scalar_type()) || !at::isFloatingType(out.scalar_type())) {
    return OPENNEURON_FALLBACK(mean_out, self, dim, keepdim, dtype, out);
  }
  OPENNEURON_NATIVE_OP("aten::mean.out");
  check_same_device("aten::mean.out", {&self, &out});
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = reduced_dims(self, dim);
  at::native::resize_output(out, reduced_shape(self, mask, keepdim));
  launch_reduce("aten::mean", kernels::ReduceOp::Mean, self, mask, out);
  return out;
}

at::Tensor mean_dim(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype) {
  const at::ScalarType result = dtype.value_or(self.scalar_type());
  if (!reduce_is_native(self, result) || !at::isFloatingType(result)) {
    // The host kernel also raises PyTorch's own error for integer inputs.
    return OPENNEURON_FALLBACK(mean_dim, self, dim, keepdim, dtype);
  }
  OPENNEURON_NATIVE_OP("aten::mean.dim");
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = reduced_dims(self, dim);
  at::Tensor out = at::empty(reduced_shape(self, mask, keepdim), self.options().dtype(result));
  launch_reduce("aten::mean", kernels::ReduceOp::Mean, self, mask, out);
  return out;
}

}  // namespace openneuron::bridge
