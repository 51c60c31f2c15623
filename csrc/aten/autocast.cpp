// torch.autocast("neuron"): the same cast policies as CUDA's, from PyTorch's shared op lists.
// Matmuls and convolutions run in the autocast dtype; precision-sensitive ops in fp32.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace openneuron::bridge {

namespace {

using at::Tensor;
using c10::IntArrayRef;
using c10::Scalar;
using c10::ScalarType;

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define OPENNEURON_LOWER_PRECISION(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define OPENNEURON_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define OPENNEURON_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define OPENNEURON_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_LOWER_PRECISION_FP(OPENNEURON_LOWER_PRECISION)
  AT_FORALL_FP32(OPENNEURON_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(OPENNEURON_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(OPENNEURON_PROMOTE)
#undef OPENNEURON_LOWER_PRECISION
#undef OPENNEURON_FP32
#undef OPENNEURON_FP32_SET_OPT_DTYPE
#undef OPENNEURON_PROMOTE
}

}  // namespace

}  // namespace openneuron::bridge
