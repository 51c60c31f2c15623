// zero_: fill with 0 on the device (optimizers create their states with zeros_like -> zero_).
#include <ATen/ops/view_as_real.h>
#include <ATen/ops/zero.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/same_width_bits.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/pointwise/ops_elementwise_pointwise.h"
#include "kernels/pointwise/cast.h"

namespace openneuron::bridge {

at::Tensor& zero_(at::Tensor& self) {
  if (!all_native_dtypes({&self}) && self.scalar_type() != at::kDouble) {
    // Zero is all bits clear in every format the device stores (fp8, e8m0, fp4, complex).
    // complex128 as its two 8-byte halves.
    at::Tensor bits =
        same_width_bits(self.scalar_type() == at::kComplexDouble ? at::view_as_real(self) : self);
    if (!bits.defined()) return OPENNEURON_FALLBACK(zero_, self);
    bridge::zero_(bits);
    return self;
  }
  OPENNEURON_NATIVE_OP("aten::zero_");
  if (self.numel() == 0) return self;
  const c10::DeviceGuard guard(self.device());
  const kernels::TensorView view = view_of(self);
  stream_for(self).enqueue("aten::zero_",
                           [view] { kernels::fill(view, kernels::Scalar::from_int(0)); });
  return self;
}

}  // namespace openneuron::bridge
