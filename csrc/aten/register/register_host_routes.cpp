// Ops whose PyTorch kernel is a CompositeExplicitAutograd one that cannot run on this device
// (it checks for CPU/CUDA, or calls a DispatchStub that has no neuron kernel), so the global
// host fallback never sees them: they are routed to it explicitly here.
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

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // mode_out rejects devices other than CPU/CUDA/XPU; the CPU kernel computes it on the host.
  m.impl("mode.values", torch::CppFunction::makeFromBoxedFunction<&host_fallback>());
  m.impl("conj_physical_", TORCH_FN(conj_physical_inplace));
}

}  // namespace openneuron::bridge
