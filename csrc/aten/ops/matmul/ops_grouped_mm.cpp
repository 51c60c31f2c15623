// torch._grouped_mm on the device: a mixture of experts' per-expert products as one kernel,
// with the group boundaries read on the device (no host round trip for the offsets).
#include <ATen/native/GroupedMMUtils.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/ops.h"
#include "kernels/matmul/grouped_gemm.h"

namespace openneuron::bridge {

namespace {

bool is_grouped_mm_dtype(at::ScalarType type) {
  return type == at::kFloat || type == at::kBFloat16 || type == at::kHalf;
}

// CUDA's checks of _grouped_mm, with its messages, except the alignment and stride rules of
// its TMA loads: any strides work here (autograd hands the backward expanded gradients).
void check_grouped_mm(const at::Tensor& a, const at::Tensor& b,
                      const std::optional<at::Tensor>& offs,
                      const std::optional<at::Tensor>& bias) {
  TORCH_CHECK(is_grouped_mm_dtype(a.scalar_type()),
              "Expected mat_a to be Float32, BFloat16 or Float16 matrix, got ", a.scalar_type());
  TORCH_CHECK(is_grouped_mm_dtype(b.scalar_type()),
              "Expected mat_b to be Float32, BFloat16 or Float16 matrix, got ", b.scalar_type());
  TORCH_CHECK(a.dim() == 2 || a.dim() == 3, "mat_a has to be 2 or 3d");
  TORCH_CHECK(b.dim() == 2 || b.dim() == 3, "mat_b has to be 2 or 3d");
  const bool a_is_2d = a.dim() == 2;
  const bool b_is_2d = b.dim() == 2;
  // Both 2-D: the grouped dimension is the contraction (CUDA does not check it, and reads past
  // mat_b's end when it is shorter).
  TORCH_CHECK(a.size(-1) == b.size(-2), "contraction dimension of mat_a and mat_b must match");
  TORCH_CHECK(offs.has_value() == (a_is_2d || b_is_2d),
              "Have to provide offsets if there is a 2d matrix, or no offset if both matrices "
              "are 3d");
  if (offs.has_value()) {
    TORCH_CHECK(offs->dim() == 1, "offs has to be 1D");
    TORCH_CHECK(offs->scalar_type() == at::kInt, "Offsets have to be int32");
  }
  TORCH_CHECK(!bias.has_value(), "Bias not supported yet");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(),
              "expected mat_a and mat_b to have the same dtype, but got: ", a.scalar_type(),
              " != ", b.scalar_type());
}

}  // namespace

at::Tensor grouped_mm(const at::Tensor& self, const at::Tensor& mat2,
                      const std::optional<at::Tensor>& offs, const std::optional<at::Tensor>& bias,
                      std::optional<at::ScalarType> out_dtype) {
  OPENNEURON_NATIVE_OP("aten::_grouped_mm");
  const at::Tensor offsets = offs.value_or(at::Tensor());
  const c10::Device device = check_same_device("_grouped_mm", {&self, &mat2, &offsets});
  check_grouped_mm(self, mat2, offs, bias);
  const at::ScalarType result_dtype =
      at::native::_resolve_grouped_mm_out_dtype(self, mat2, out_dtype);
  const c10::DeviceGuard guard(device);
  // Laid out as CUDA lays it out (rows padded to 16 bytes), so strides match its meta kernel.
  at::Tensor out = at::native::create_grouped_gemm_output_tensor(self, mat2, offs, result_dtype);
  if (out.numel() == 0) return out;
  const kernels::TensorView out_view = view_of(out);
  const kernels::TensorView a_view = view_of(self);
  const kernels::TensorView b_view = view_of(mat2);
  const bool has_offsets = offsets.defined();
  const kernels::TensorView offsets_view = has_offsets ? view_of(offsets) : kernels::TensorView();
  stream_for(out).enqueue("aten::_grouped_mm", [=] {
    kernels::grouped_gemm(out_view, a_view, b_view, has_offsets ? &offsets_view : nullptr);
  });
  return out;
}

}  // namespace openneuron::bridge
