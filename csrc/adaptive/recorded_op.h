// One eager pointwise op as adaptive eager records it: the kernel call it would have queued.
#pragma once

#include "adaptive/recorded_view.h"
#include "kernels/pointwise/pointwise.h"

namespace openneuron::adaptive {

// An operand already broadcast to the op's shape (stride 0 along broadcast dims), or a host
// scalar captured by value (then view.data is rebound to host_value when the op runs).
struct RecordedInput {
  RecordedView view;
  alignas(8) unsigned char host_value[16] = {};
  bool on_host = false;
};

struct RecordedOp {
  const char* name = "";  // the eager op ("aten::mul"); storage that outlives the process's ops
  // A dtype conversion out = inputs[0] (kernels::copy's rounding); `op`, `compute` and `params`
  // are then unused.
  bool is_cast = false;
  kernels::PointwiseOp op = kernels::PointwiseOp::Abs;
  kernels::DType compute = kernels::DType::Float32;
  kernels::PointwiseParams params;
  RecordedView out;
  RecordedInput inputs[3];
  int num_inputs = 0;
  // `out` lies in a block of the device's caching allocator (every neuron tensor does). Once
  // that block is no longer live, nobody can read what the op would have stored there.
  bool out_in_device_block = false;
};

// Runs the op as eager would have (kernels::pointwise or kernels::copy on its views).
void run_recorded_op(RecordedOp op);

}  // namespace openneuron::adaptive
