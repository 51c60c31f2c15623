// torch.repeat_interleave of a repeats tensor (aten::repeat_interleave.Tensor): the index list
// that repeat_interleave(self, repeats) then gathers with. The CPU's checks, at the call; without
// output_size the total is read from the device (as CUDA reads it), with it nothing is read and
// a count that disagrees fails in the queued kernel, at the next synchronizing call.
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <optional>
#include <stdexcept>

#include "aten/core/op_tracking.h"
#include "aten/core/runtime_errors.h"
#include "aten/core/tensor_views.h"
#include "kernels/shape/repeat_interleave.h"

namespace openneuron::bridge {
namespace {

at::Tensor repeat_interleave_indices(const at::Tensor& repeats,
                                     std::optional<int64_t> output_size) {
  OPENNEURON_NATIVE_OP("aten::repeat_interleave.Tensor");
  const at::ScalarType dtype = repeats.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(dtype == at::kInt || dtype == at::kLong,
                              "\"repeat_interleave_cpu\" not implemented for '", dtype, "'");
  TORCH_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  const c10::DeviceGuard guard(repeats.device());
  if (repeats.size(0) == 0) return at::empty_like(repeats, at::MemoryFormat::Contiguous);
  const kernels::TensorView repeats_view = view_of(repeats);
  int64_t total = 0;
  if (output_size.has_value()) {
    total = *output_size;
  } else {
    // The result's length is the counts' sum: wait for the work that writes them, then read.
    OPENNEURON_RUNTIME_CALL(stream_for(repeats).synchronize());
    try {
      total = kernels::repeat_interleave_total(repeats_view);
    } catch (const std::invalid_argument& error) {
      TORCH_CHECK(false, error.what());
    }
  }
  at::Tensor result = at::empty({total}, repeats.options());
  const kernels::TensorView out_view = view_of(result);
  stream_for(result).enqueue("aten::repeat_interleave.Tensor",
                             [=] { kernels::repeat_interleave_indices(out_view, repeats_view); });
  return result;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("repeat_interleave.Tensor", TORCH_FN(repeat_interleave_indices));
}

}  // namespace openneuron::bridge
