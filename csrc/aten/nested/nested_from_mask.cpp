// torch._nested_tensor_from_mask and _nested_tensor_from_mask_left_aligned for device tensors:
// how nn.TransformerEncoder turns a padded batch and its key padding mask into a nested tensor
// for its fast path. The argument checks are PyTorch's (RuntimeError for each).
#include <ATen/ops/arange.h>
#include <torch/library.h>

#include "aten/core/op_tracking.h"
#include "aten/nested/padded_rows.h"

namespace openneuron::bridge::nested {
namespace {

void check_mask_and_input(const at::Tensor& t, const at::Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "Expected mask to be of type Bool, but got ",
              mask.scalar_type(), " instead.");
  TORCH_CHECK(mask.dim() == 2, "Padding mask should be 2D");
  TORCH_CHECK(t.dim() == 3, "Input should be a 3D tensor, N * L * D");
  TORCH_CHECK(mask.size(0) == t.size(0) && mask.size(1) == t.size(1),
              "Mask size should match input size");
}

// Each row's count of true entries (the kept length), read back to the host.
std::vector<int64_t> kept_lengths(const at::Tensor& mask) {
  auto counts = mask.sum(1).to(at::kCPU, at::kLong).contiguous();
  const auto* data = counts.const_data_ptr<int64_t>();
  return std::vector<int64_t>(data, data + counts.numel());
}

// True when every row of the mask is its true entries followed by its false ones.
bool is_left_aligned(const at::Tensor& mask) {
  auto lengths = mask.sum(1, /*keepdim=*/true);
  auto positions = at::arange(mask.size(1), mask.options().dtype(at::kLong)).unsqueeze(0);
  return positions.lt(lengths).eq(mask).all().item<bool>();
}

bool nested_tensor_from_mask_left_aligned(const at::Tensor& t, const at::Tensor& mask) {
  OPENNEURON_NATIVE_OP("aten::_nested_tensor_from_mask_left_aligned");
  check_mask_and_input(t, mask);
  return is_left_aligned(mask);
}

at::Tensor nested_tensor_from_mask(const at::Tensor& t, const at::Tensor& mask, bool mask_check) {
  OPENNEURON_NATIVE_OP("aten::_nested_tensor_from_mask");
  check_mask_and_input(t, mask);
  if (mask_check) {
    TORCH_CHECK(is_left_aligned(mask), "Mask should be left aligned");
  }
  return nested_from_padded_rows(t, kept_lengths(mask));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_nested_tensor_from_mask", TORCH_FN(nested_tensor_from_mask));
  m.impl("_nested_tensor_from_mask_left_aligned", TORCH_FN(nested_tensor_from_mask_left_aligned));
}

}  // namespace openneuron::bridge::nested
