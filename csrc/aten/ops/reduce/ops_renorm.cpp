// torch.renorm on the device, composed as the CPU's kernel computes it: the norm of every
// slice along dim (16-bit inputs in fp32), a factor maxnorm / (norm + 1e-7) where the norm
// exceeds maxnorm (else 1) rounded to the input's dtype, and the input times it.
#include <ATen/core/Tensor.h>

#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/add.h>
#include <ATen/ops/div.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/gt.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/renorm_ops.h>
#include <ATen/ops/where.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <vector>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/fallback/fallback.h"

namespace openneuron::bridge {
namespace {

bool renorm_is_native(const at::Tensor& self) {
  const at::ScalarType dtype = self.scalar_type();
  return (dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16) &&
         self.is_privateuseone();
}

// The CPU's argument checks, in its order.
void check_renorm(const at::Tensor& self, const at::Scalar& p, const at::Scalar& maxnorm) {
  TORCH_CHECK(!p.isComplex(), "renorm: p must be real-valued");
  TORCH_CHECK(p.toDouble() > 0.0, "renorm: non-positive-norm not supported");
  TORCH_CHECK(!maxnorm.isComplex(), "renorm: maxnorm must be real-valued");
  TORCH_CHECK(maxnorm.toDouble() >= 0.0, "renorm: expected maxnorm to be >= 0 but got ",
              maxnorm.toDouble());
  TORCH_CHECK(self.dim() > 1, "renorm: input needs at least 2 dimensions, got ", self.dim(),
              " dimensions");
}

at::Tensor renorm_factor(const at::Tensor& self, const at::Scalar& p, int64_t dim,
                         const at::Scalar& maxnorm) {
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  std::vector<int64_t> reduce_dims;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d != wrapped) reduce_dims.push_back(d);
  }
  const at::Tensor norm =
      at::linalg_vector_norm(self, p, reduce_dims, /*keepdim=*/true, at::ScalarType::Float);
  const at::Tensor shrink = at::div(at::full_like(norm, maxnorm), at::add(norm, 1e-7));
  return at::where(at::gt(norm, maxnorm), shrink, 1.0).to(self.scalar_type());
}

at::Tensor& renorm_out(const at::Tensor& self, const at::Scalar& p, int64_t dim,
                       const at::Scalar& maxnorm, at::Tensor& out) {
  if (!renorm_is_native(self) || out.scalar_type() != self.scalar_type()) {
    return OPENNEURON_FALLBACK(renorm_out, self, p, dim, maxnorm, out);
  }
  OPENNEURON_NATIVE_OP("aten::renorm.out");
  const c10::DeviceGuard guard(check_same_device("renorm", {&self, &out}));
  check_renorm(self, p, maxnorm);
  const at::Tensor factor = renorm_factor(self, p, dim, maxnorm);
  if (!out.is_same(self)) at::native::resize_output(out, self.sizes());
  return at::mul_out(out, self, factor);
}

at::Tensor renorm(const at::Tensor& self, const at::Scalar& p, int64_t dim,
                  const at::Scalar& maxnorm) {
  if (!renorm_is_native(self)) return OPENNEURON_FALLBACK(renorm, self, p, dim, maxnorm);
  OPENNEURON_NATIVE_OP("aten::renorm");
  const c10::DeviceGuard guard(self.device());
  check_renorm(self, p, maxnorm);
  return at::mul(self, renorm_factor(self, p, dim, maxnorm));
}

at::Tensor& renorm_(at::Tensor& self, const at::Scalar& p, int64_t dim, const at::Scalar& maxnorm) {
  if (!renorm_is_native(self)) return OPENNEURON_FALLBACK(renorm_, self, p, dim, maxnorm);
  OPENNEURON_NATIVE_OP("aten::renorm_");
  const c10::DeviceGuard guard(self.device());
  check_renorm(self, p, maxnorm);
  return self.mul_(renorm_factor(self, p, dim, maxnorm));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("renorm", TORCH_FN(renorm));
  m.impl("renorm_", TORCH_FN(renorm_));
  m.impl("renorm.out", TORCH_FN(renorm_out));
}

}  // namespace openneuron::bridge
