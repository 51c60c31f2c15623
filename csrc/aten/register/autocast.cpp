// torch.autocast("neuron"): the same cast policies as CUDA's, from PyTorch's shared op lists.
// Matmuls and convolutions run in the autocast dtype; precision-sensitive ops in fp32; and,
// as under CUDA's autocast, binary_cross_entropy is refused.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace openneuron::bridge {

namespace {

using at::Tensor;
using c10::IntArrayRef;
using c10::Scalar;
using c10::ScalarType;

// binary_cross_entropy takes probabilities, usually a sigmoid's output: in fp16 those round to
// exactly 0 or 1 and its log to -inf, so autocast refuses it rather than cast it either way.
Tensor binary_cross_entropy_refused(const Tensor&, const Tensor&, const std::optional<Tensor>&,
                                    int64_t) {
  TORCH_CHECK(
      false,
      "neuron autocast: torch.nn.functional.binary_cross_entropy (and torch.nn.BCELoss) "
      "is unsafe to autocast: its inputs are probabilities, which float16/bfloat16 can "
      "round to exactly 0 or 1. Use torch.nn.functional.binary_cross_entropy_with_logits (or "
      "torch.nn.BCEWithLogitsLoss) on the logits instead of a sigmoid followed by "
      "binary_cross_entropy: it is safe to autocast. Or compute the loss outside the "
      "autocast region.");
}

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
  m.impl("binary_cross_entropy", TORCH_FN(binary_cross_entropy_refused));
}

}  // namespace

}  // namespace openneuron::bridge
