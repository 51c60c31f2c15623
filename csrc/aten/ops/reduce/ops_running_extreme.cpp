// cummax and cummin on the device: PyTorch's composite cummax/cummin size the outputs and call
// these helpers, which the CPU computes for every dtype but complex.
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/_cummax_helper_ops.h>
#include <ATen/ops/_cummin_helper_ops.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "kernels/reduce/running_extreme.h"

namespace openneuron::bridge {
namespace {

bool running_extreme_is_native(const at::Tensor& self, const at::Tensor& values,
                               const at::Tensor& indices) {
  return is_native_compute_dtype(self.scalar_type()) && self.dim() <= kernels::kMaxDims &&
         values.scalar_type() == self.scalar_type() && indices.scalar_type() == at::kLong &&
         values.sizes() == self.sizes() && indices.sizes() == self.sizes();
}

void enqueue_running_extreme(const char* name, const at::Tensor& self, at::Tensor& values,
                             at::Tensor& indices, int64_t dim, bool largest) {
  const c10::DeviceGuard guard(check_same_device(name, {&self, &values, &indices}));
  if (self.numel() == 0) return;
  const int d = static_cast<int>(at::maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/true));
  // The helpers write values while they read self only when a caller passes aliases; a copy
  // keeps reading the original elements.
  const at::Tensor source = unaliased_input(self, {&values, &indices});
  const kernels::TensorView values_view = view_of(values);
  const kernels::TensorView indices_view = view_of(indices);
  const kernels::TensorView in_view = view_of(source);
  const int kernel_dim = self.dim() == 0 ? 0 : d;
  stream_for(values).enqueue(name, [=] {
    kernels::running_extreme(values_view, indices_view, in_view, kernel_dim, largest);
  });
}

void cummax_helper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim) {
  if (!running_extreme_is_native(self, values, indices)) {
    return OPENNEURON_FALLBACK(_cummax_helper, self, values, indices, dim);
  }
  OPENNEURON_NATIVE_OP("aten::_cummax_helper");
  enqueue_running_extreme("aten::cummax", self, values, indices, dim, /*largest=*/true);
}

void cummin_helper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim) {
  if (!running_extreme_is_native(self, values, indices)) {
    return OPENNEURON_FALLBACK(_cummin_helper, self, values, indices, dim);
  }
  OPENNEURON_NATIVE_OP("aten::_cummin_helper");
  enqueue_running_extreme("aten::cummin", self, values, indices, dim, /*largest=*/false);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_cummax_helper", TORCH_FN(cummax_helper));
  m.impl("_cummin_helper", TORCH_FN(cummin_helper));
}

}  // namespace openneuron::bridge
