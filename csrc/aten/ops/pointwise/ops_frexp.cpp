// torch.frexp on the device (16-bit floats and fp32; float64 stays on the host by design), with
// the CPU's dtype checks of the two outputs at the call.
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/frexp_ops.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "kernels/pointwise/frexp.h"

namespace openneuron::bridge {
namespace {

std::tuple<at::Tensor&, at::Tensor&> frexp_out(const at::Tensor& self, at::Tensor& mantissa,
                                               at::Tensor& exponent) {
  const at::ScalarType dtype = self.scalar_type();
  const bool native = dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16;
  if (!native || mantissa.scalar_type() != dtype || exponent.scalar_type() != at::kInt) {
    // The host raises the CPU's errors for integer inputs and wrong output dtypes.
    return OPENNEURON_FALLBACK(frexp_Tensor_out, self, mantissa, exponent);
  }
  OPENNEURON_NATIVE_OP("aten::frexp.Tensor_out");
  const c10::DeviceGuard guard(check_same_device("frexp", {&self, &mantissa, &exponent}));
  at::native::resize_output(mantissa, self.sizes());
  at::native::resize_output(exponent, self.sizes());
  if (self.numel() == 0) return {mantissa, exponent};
  const at::Tensor source = unaliased_input(self, {&mantissa, &exponent});
  const kernels::TensorView mantissa_view = view_of(mantissa);
  const kernels::TensorView exponent_view = view_of(exponent);
  const kernels::TensorView in_view = view_of(source);
  stream_for(mantissa).enqueue("aten::frexp",
                               [=] { kernels::frexp(mantissa_view, exponent_view, in_view); });
  return {mantissa, exponent};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("frexp.Tensor_out", TORCH_FN(frexp_out)); }

}  // namespace openneuron::bridge
