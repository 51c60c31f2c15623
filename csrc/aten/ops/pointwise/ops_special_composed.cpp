// mvlgamma.out on the device: the functional op (native pieces) written into out=.
#include "aten/ops/pointwise/ops_special_composed.h"

#include <ATen/native/Resize.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/fallback/fallback.h"

namespace openneuron::bridge {

at::Tensor& mvlgamma_out(const at::Tensor& self, int64_t p, at::Tensor& out) {
  if (!self.is_privateuseone() || !out.is_privateuseone() || !all_native_dtypes({&self, &out})) {
    return OPENNEURON_FALLBACK(mvlgamma_out, self, p, out);
  }
  OPENNEURON_NATIVE_OP("aten::mvlgamma.out");
  const at::Tensor result = at::mvlgamma(self, p);
  TORCH_CHECK(at::can_cast(result.scalar_type(), out.scalar_type()), "mvlgamma: result type ",
              self.scalar_type(), " can't be cast to the desired output type ",
              result.scalar_type());
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

}  // namespace openneuron::bridge
