// Ops whose PyTorch kernel is a CompositeExplicitAutograd one that cannot run on this device
// (it checks for CPU/CUDA, or calls a DispatchStub that has no neuron kernel), so the global
// host fallback never sees them: they are routed to it explicitly here.
#include <torch/library.h>

#include "aten/fallback/fallback.h"

namespace openneuron::bridge {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // mode_out rejects devices other than CPU/CUDA/XPU; the CPU kernel computes it on the host.
  m.impl("mode.values", torch::CppFunction::makeFromBoxedFunction<&host_fallback>());
}

}  // namespace openneuron::bridge
