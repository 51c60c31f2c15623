// torch.linalg.cross (and torch.cross) on the device. The CPU's checks run first and in its
// order (equal ranks, length 3 at dim, broadcastable shapes, the meta kernel's, equal dtypes), so
// errors are the CPU's, raised at the call; the gradient is linalg_cross again (PyTorch's
// formula), so it runs here too.
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/linalg_cross.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "kernels/pointwise/cross_product.h"

namespace openneuron::bridge {
namespace {

at::Tensor meta_like(const at::Tensor& tensor) {
  return at::empty_strided(tensor.sizes(), tensor.strides(),
                           tensor.options().device(c10::DeviceType::Meta));
}

bool cross_is_native(const at::Tensor& self) {
  const at::ScalarType dtype = self.scalar_type();
  return is_native_compute_dtype(dtype) && !at::isComplexType(dtype) &&
         self.dim() <= kernels::kMaxDims;
}

at::Tensor& linalg_cross_out(const at::Tensor& self, const at::Tensor& other, int64_t dim,
                             at::Tensor& out) {
  if (!cross_is_native(self)) return OPENNEURON_FALLBACK(linalg_cross_out, self, other, dim, out);
  OPENNEURON_NATIVE_OP("aten::linalg_cross.out");
  // The CPU kernel's checks in its order, with its messages (the meta kernel words them
  // otherwise): equal ranks, length 3 at dim, broadcastable shapes.
  TORCH_CHECK(self.dim() == other.dim(),
              "linalg.cross: inputs must have the same number of dimensions.");
  const int64_t at_dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(self.size(at_dim) == 3 && other.size(at_dim) == 3, "linalg.cross: inputs dimension ",
              dim, " must have length 3. Got ", self.size(at_dim), " and ", other.size(at_dim));
  (void)at::infer_size(self.sizes(), other.sizes());
  const at::Tensor checked = at::linalg_cross(meta_like(self), meta_like(other), dim);
  // The meta kernel lets operands of two dtypes through; the CPU kernel refuses them.
  TORCH_CHECK(self.scalar_type() == other.scalar_type(), "expected scalar type ",
              self.scalar_type(), " but found ", other.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != at::kBool,
                              "\"cross\" not implemented for 'Bool'");
  const c10::DeviceGuard guard(check_same_device("linalg_cross.out", {&self, &other, &out}));
  TORCH_CHECK(out.dtype() == self.dtype(), "Expected out tensor to have dtype ", self.dtype(),
              ", but got ", out.dtype(), " instead");
  at::native::resize_output(out, checked.sizes());
  if (out.numel() == 0) return out;
  const int wrapped = static_cast<int>(at::maybe_wrap_dim(dim, out.dim()));
  const kernels::TensorView out_view = view_of(out);
  const kernels::TensorView a_view = broadcast_view(self, out.sizes());
  const kernels::TensorView b_view = broadcast_view(other, out.sizes());
  stream_for(out).enqueue("aten::linalg_cross",
                          [=] { kernels::cross_product(out_view, a_view, b_view, wrapped); });
  return out;
}

at::Tensor linalg_cross(const at::Tensor& self, const at::Tensor& other, int64_t dim) {
  if (!cross_is_native(self)) return OPENNEURON_FALLBACK(linalg_cross, self, other, dim);
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = at::empty({0}, self.options());
  return linalg_cross_out(self, other, dim, out);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_cross", TORCH_FN(linalg_cross));
  m.impl("linalg_cross.out", TORCH_FN(linalg_cross_out));
}

}  // namespace openneuron::bridge
