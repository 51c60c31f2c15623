// conj_physical on the device: a no-op (in place) or a copy (out=) for real tensors; for
// complex64 and complex32 a copy whose imaginary halves are negated through the float pair view.
// complex128 and conjugate views run on the host. ATen's own kernels call a DispatchStub that
// has no neuron kernel, so the global fallback would never see these ops.
#include <ATen/native/Resize.h>
#include <ATen/ops/conj_physical.h>
#include <ATen/ops/view_as_real.h>
#include <torch/library.h>

#include "aten/core/op_tracking.h"
#include "aten/fallback/fallback.h"

namespace openneuron::bridge {

namespace {

// Complex tensors the device conjugates itself: 32- and 64-bit complex, no pending conj bit.
bool conjugates_natively(const at::Tensor& tensor) {
  const at::ScalarType dtype = tensor.scalar_type();
  return (dtype == at::kComplexFloat || dtype == at::kComplexHalf) && !tensor.is_conj();
}

void negate_imaginary_parts(const at::Tensor& complex) {
  at::view_as_real(complex).select(-1, 1).neg_();
}

at::Tensor& conj_physical_inplace(at::Tensor& self) {
  if (self.is_complex() && !conjugates_natively(self)) {
    return OPENNEURON_FALLBACK(conj_physical_, self);
  }
  OPENNEURON_NATIVE_OP("aten::conj_physical_");
  if (self.is_complex()) negate_imaginary_parts(self);
  return self;
}

// out= takes only the input's own dtype, as the CPU's unary kernels require.
at::Tensor& conj_physical_into(const at::Tensor& self, at::Tensor& out) {
  if (self.is_complex() && !(conjugates_natively(self) && conjugates_natively(out))) {
    return OPENNEURON_FALLBACK(conj_physical_out, self, out);
  }
  OPENNEURON_NATIVE_OP("aten::conj_physical.out");
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "Found dtype ", out.scalar_type(),
              " but expected ", self.scalar_type());
  at::native::resize_output(out, self.sizes());
  out.copy_(self);
  if (out.is_complex()) negate_imaginary_parts(out);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("conj_physical_", TORCH_FN(conj_physical_inplace));
  m.impl("conj_physical.out", TORCH_FN(conj_physical_into));
}

}  // namespace openneuron::bridge
