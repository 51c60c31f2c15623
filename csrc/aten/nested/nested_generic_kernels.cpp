// Strided-layout nested tensors on the device (dispatch key NestedTensorPrivateUse1).
// PyTorch writes most nested kernels device-generically: they reshape the nested sizes (a host
// tensor) and call dispatcher ops on the buffer, which then run on the buffer's device. PyTorch
// registers exactly those generic kernels for each device without nested kernels of its own
// (the NestedTensorHPU table holds them and nothing device-specific), so an op with a kernel
// there runs that kernel here; an op without one raises NotImplementedError as on any device
// that lacks it. to_padded_tensor's generic kernel is registered by name (PyTorch lists it for
// the CPU only).
#include <ATen/ops/to_padded_tensor_native.h>
#include <c10/core/DispatchKey.h>
#include <torch/library.h>

namespace openneuron::bridge::nested {
namespace {

void run_generic_nested_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet,
                               torch::jit::Stack* stack) {
  // The table of PyTorch's device-generic nested kernels.
  constexpr auto generic_kernels = c10::DispatchKey::NestedTensorHPU;
  TORCH_CHECK_NOT_IMPLEMENTED(
      op.hasKernelForDispatchKey(generic_kernels), "Could not run '", op.operator_name(),
      "' with arguments from the '", c10::DispatchKey::NestedTensorPrivateUse1,
      "' backend: PyTorch has no device-generic nested-tensor kernel for it (use the jagged "
      "layout, torch.nested.nested_tensor(..., layout=torch.jagged), or unbind the nested tensor)");
  op.redispatchBoxed(c10::DispatchKeySet(generic_kernels), stack);
}

}  // namespace

TORCH_LIBRARY_IMPL(_, NestedTensorPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&run_generic_nested_kernel>());
}

TORCH_LIBRARY_IMPL(aten, NestedTensorPrivateUse1, m) {
  m.impl("to_padded_tensor", TORCH_FN(at::native::NestedTensor_to_padded_tensor_generic));
  // Ops with a CompositeImplicitAutograd kernel, which the dispatcher would pick before the
  // fallback above (and which cannot read a nested tensor's sizes): their nested kernels.
  for (const char* op : {"linear", "matmul", "matmul.out", "chunk", "narrow", "silu_backward"}) {
    m.impl(op, torch::CppFunction::makeFromBoxedFunction<&run_generic_nested_kernel>());
  }
}

}  // namespace openneuron::bridge::nested
