// torch.nonzero_static on the device: its result has a fixed shape, so unlike nonzero nothing
// waits for the data; the CPU's checks (size, out dtype) run at the call.
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "kernels/shape/nonzero_static.h"

namespace openneuron::bridge {
namespace {

bool nonzero_static_is_native(const at::Tensor& self) {
  return is_native_compute_dtype(self.scalar_type()) && self.dim() <= kernels::kMaxDims;
}

at::Tensor& nonzero_static_out(const at::Tensor& self, int64_t size, int64_t fill_value,
                               at::Tensor& out) {
  if (!nonzero_static_is_native(self)) {
    return OPENNEURON_FALLBACK(nonzero_static_out, self, size, fill_value, out);
  }
  OPENNEURON_NATIVE_OP("aten::nonzero_static.out");
  const c10::DeviceGuard guard(check_same_device("nonzero_static.out", {&self, &out}));
  TORCH_CHECK(size >= 0, "nonzero_static: 'size' must be an non-negative integer");
  TORCH_CHECK(out.scalar_type() == at::kLong,
              "nonzero_static: Expected out tensor to have scalar type Long but got scalar type",
              out.scalar_type());
  at::native::resize_output(out, {size, self.dim()});
  if (out.numel() == 0) return out;
  const kernels::TensorView out_view = view_of(out);
  const kernels::TensorView in_view = view_of(self);
  stream_for(out).enqueue("aten::nonzero_static",
                          [=] { kernels::nonzero_static(out_view, in_view, fill_value); });
  return out;
}

at::Tensor nonzero_static(const at::Tensor& self, int64_t size, int64_t fill_value) {
  if (!nonzero_static_is_native(self)) {
    return OPENNEURON_FALLBACK(nonzero_static, self, size, fill_value);
  }
  OPENNEURON_NATIVE_OP("aten::nonzero_static");
  const c10::DeviceGuard guard(self.device());
  TORCH_CHECK(size >= 0, "nonzero_static: 'size' must be an non-negative integer");
  at::Tensor out = at::empty({size, self.dim()}, self.options().dtype(at::kLong));
  return nonzero_static_out(self, size, fill_value, out);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nonzero_static", TORCH_FN(nonzero_static));
  m.impl("nonzero_static.out", TORCH_FN(nonzero_static_out));
}

}  // namespace openneuron::bridge
