// Ops whose PyTorch kernel is a CompositeExplicitAutograd one that cannot run on this device
// (it checks for CPU/CUDA, or calls a DispatchStub that has no neuron kernel), so the global
// host fallback never sees them: they are routed to it explicitly here.
#include <ATen/native/Resize.h>
#include <ATen/ops/conj_physical.h>
#include <torch/library.h>

#include "aten/core/op_tracking.h"
#include "aten/fallback/fallback.h"

namespace openneuron::bridge {

namespace {

// conj_physical_ is a no-op for non-complex tensors (as in ATen); complex runs on the host
// (ATen's composite calls conj_physical_stub directly, which has no neuron kernel).
at::Tensor& conj_physical_inplace(at::Tensor& self) {
  if (!self.is_complex()) {
    OPENNEURON_NATIVE_OP("aten::conj_physical_");
    return self;
  }
  return OPENNEURON_FALLBACK(conj_physical_, self);
}

// conj_physical's out= form: a copy for real tensors (out of the input's own dtype, as the
// CPU's unary kernels require); complex runs on the host as above.
at::Tensor& conj_physical_into(const at::Tensor& self, at::Tensor& out) {
  if (self.is_complex()) return OPENNEURON_FALLBACK(conj_physical_out, self, out);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "Found dtype ", out.scalar_type(),
              " but expected ", self.scalar_type());
  at::native::resize_output(out, self.sizes());
  return out.copy_(self);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // mode_out rejects devices other than CPU/CUDA/XPU; the CPU kernel computes it on the host.
  m.impl("mode.values", torch::CppFunction::makeFromBoxedFunction<&host_fallback>());
  m.impl("conj_physical_", TORCH_FN(conj_physical_inplace));
  m.impl("conj_physical.out", TORCH_FN(conj_physical_into));
}

}  // namespace openneuron::bridge
