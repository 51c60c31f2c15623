// Complex tensors through their float pairs: complex64 times a real factor (a float32 tensor or
// a real Python scalar, as the gradients of irfft/hfft scale their complex halves) by the
// native float multiply, and torch.complex writing the two halves. Every other product goes to
// mul itself.
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/complex_ops.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/view_as_complex.h>
#include <ATen/ops/view_as_real.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/ops.h"

namespace openneuron::bridge {
namespace {

// A real Python scalar, or the 0-dim CPU tensor mul_.Scalar makes of one.
bool is_wrapped_real(const at::Tensor& t) {
  return (t.unsafeGetTensorImpl()->is_wrapped_number() || (t.is_cpu() && t.dim() == 0)) &&
         !t.is_complex();
}

// The complex operand is a plain complex64 device tensor (no lazy conjugate or negation) and
// the factor a float32 device tensor or a real Python scalar.
bool complex_times_real(const at::Tensor& complex, const at::Tensor& factor) {
  return complex.scalar_type() == at::kComplexFloat && complex.is_privateuseone() &&
         !complex.is_conj() && !complex.is_neg() &&
         ((factor.scalar_type() == at::kFloat && factor.is_privateuseone()) ||
          is_wrapped_real(factor));
}

// The factor, broadcast against the float pairs' trailing dimension.
at::Tensor pair_factor(const at::Tensor& factor) {
  return is_wrapped_real(factor) ? factor : factor.unsqueeze(-1);
}

}  // namespace

at::Tensor mul_with_complex(const at::Tensor& self, const at::Tensor& other) {
  const bool self_complex = complex_times_real(self, other);
  if (!self_complex && !complex_times_real(other, self)) return bridge::mul(self, other);
  OPENNEURON_NATIVE_OP("aten::mul.Tensor");
  const at::Tensor& complex = self_complex ? self : other;
  const at::Tensor& factor = self_complex ? other : self;
  const c10::DeviceGuard guard(complex.device());
  return at::view_as_complex(at::mul(at::view_as_real(complex), pair_factor(factor)));
}

at::Tensor& mul_with_complex_(at::Tensor& self, const at::Tensor& other) {
  if (!complex_times_real(self, other)) return bridge::mul_(self, other);
  OPENNEURON_NATIVE_OP("aten::mul_.Tensor");
  const c10::DeviceGuard guard(self.device());
  at::view_as_real(self).mul_(pair_factor(other));
  return self;
}

at::Tensor& mul_with_complex_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  const bool self_complex = complex_times_real(self, other);
  const at::Tensor& complex = self_complex ? self : other;
  const at::Tensor& factor = self_complex ? other : self;
  // mul_ by a Python scalar arrives here with out as the complex operand: scaled in place.
  const bool in_place = out.is_same(complex) && !out.is_alias_of(factor);
  if ((!self_complex && !complex_times_real(other, self)) ||
      out.scalar_type() != at::kComplexFloat || out.is_conj() || out.is_neg() ||
      (!in_place && (out.is_alias_of(self) || out.is_alias_of(other)))) {
    return bridge::mul_out(self, other, out);
  }
  OPENNEURON_NATIVE_OP("aten::mul.out");
  const c10::DeviceGuard guard(check_same_device("mul.out", {&complex, &out}));
  if (in_place) {
    at::view_as_real(out).mul_(pair_factor(factor));
    return out;
  }
  resize_elementwise_out(out, at::infer_size(complex.sizes(), factor.sizes()), {&complex, &factor});
  at::Tensor pairs = at::view_as_real(out);
  at::mul_out(pairs, at::view_as_real(complex), pair_factor(factor));
  return out;
}

namespace {

// torch.complex(real, imag): float32 halves make complex64, float16 ones complex32 (as CUDA);
// other dtypes, mixed dtypes and aliasing outputs go to the host, which raises the CPU's errors.
at::Tensor& complex_out(const at::Tensor& real, const at::Tensor& imag, at::Tensor& out) {
  const at::ScalarType dtype = real.scalar_type();
  const at::ScalarType complex_dtype = dtype == at::kFloat  ? at::kComplexFloat
                                       : dtype == at::kHalf ? at::kComplexHalf
                                                            : at::ScalarType::Undefined;
  if (complex_dtype == at::ScalarType::Undefined || imag.scalar_type() != dtype ||
      out.scalar_type() != complex_dtype || !real.is_privateuseone() || !imag.is_privateuseone() ||
      out.is_alias_of(real) || out.is_alias_of(imag)) {
    return OPENNEURON_FALLBACK(complex_out, real, imag, out);
  }
  OPENNEURON_NATIVE_OP("aten::complex.out");
  const c10::DeviceGuard guard(check_same_device("complex.out", {&real, &imag, &out}));
  // Laid out as TensorIterator lays out a fresh output: following the inputs' strides.
  resize_elementwise_out(out, at::infer_size(real.sizes(), imag.sizes()), {&real, &imag});
  const at::Tensor pairs = at::view_as_real(out);
  pairs.select(-1, 0).copy_(real);
  pairs.select(-1, 1).copy_(imag);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("complex.out", TORCH_FN(complex_out)); }

}  // namespace openneuron::bridge
