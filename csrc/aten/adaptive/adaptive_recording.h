// Pointwise kernel calls handed to adaptive eager instead of being queued (csrc/adaptive).
#pragma once

#include <cstring>

#include "adaptive/adaptive_eager.h"
#include "aten/core/op_helpers.h"

namespace openneuron::bridge {

// Records out = op(inputs) on `stream` and returns true while adaptive eager is on; false
// (nothing done) when the caller must queue the kernel itself (also for views of more dims
// than a recorded op holds). `name` outlives the process's ops.
template <typename Input>
bool record_adaptive(runtime::Stream& stream, const char* name, kernels::PointwiseOp op,
                     const kernels::TensorView& out, const Input* inputs, int num_inputs,
                     kernels::DType compute, const kernels::PointwiseParams& params) {
  const auto view_of = [](const Input& input) -> const kernels::TensorView& {
    if constexpr (std::is_same_v<Input, Operand>) {
      return input.view;
    } else {
      return input;
    }
  };
  if (!adaptive::enabled() || !adaptive::RecordedView::fits(out)) return false;
  for (int k = 0; k < num_inputs; ++k) {
    if (!adaptive::RecordedView::fits(view_of(inputs[k]))) return false;
  }
  adaptive::RecordedOp recorded;
  recorded.name = name;
  recorded.op = op;
  recorded.compute = compute;
  recorded.params = params;
  recorded.out = adaptive::RecordedView::of(out);
  recorded.out_in_device_block = true;
  recorded.num_inputs = num_inputs;
  for (int k = 0; k < num_inputs; ++k) {
    recorded.inputs[k].view = adaptive::RecordedView::of(view_of(inputs[k]));
    if constexpr (std::is_same_v<Input, Operand>) {
      recorded.inputs[k].on_host = inputs[k].on_host;
      std::memcpy(recorded.inputs[k].host_value, inputs[k].host_value,
                  sizeof recorded.inputs[k].host_value);
    }
  }
  return adaptive::record(stream, recorded);
}

// The same for a dtype conversion dst = src (src already broadcast to dst's shape).
inline bool record_adaptive_cast(runtime::Stream& stream, const kernels::TensorView& dst,
                                 const kernels::TensorView& src) {
  if (!adaptive::enabled() || !adaptive::RecordedView::fits(dst) ||
      !adaptive::RecordedView::fits(src)) {
    return false;
  }
  adaptive::RecordedOp recorded;
  recorded.name = "aten::copy_";
  recorded.is_cast = true;
  recorded.out = adaptive::RecordedView::of(dst);
  recorded.out_in_device_block = true;
  recorded.num_inputs = 1;
  recorded.inputs[0].view = adaptive::RecordedView::of(src);
  return adaptive::record(stream, recorded);
}

}  // namespace openneuron::bridge
