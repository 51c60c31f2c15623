// The host fallback's answer to a CPU kernel that lacks a dtype CUDA has: run it wider.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <functional>
#include <string>

namespace openneuron::bridge {

// Runs the op's host run on the stack's arguments (the last op.schema().arguments().size()
// entries). If the CPU kernel raises "not implemented for 'T'" for a dtype T that CUDA computes
// (16-bit floats, complex32 and fp8 for every op; integers for the ops CUDA has integer kernels
// for and the CPU lacks), the run is repeated with every T argument converted to
// the nearest wider dtype the CPU accepts (fp16/bf16/fp8 -> fp32, complex32 -> complex64,
// small integers -> int64 -> float64). Results are then rounded once to the dtypes the op
// returns for the original arguments (its meta kernel says which; otherwise the original
// dtype), mutated arguments are written back in their own dtype, and the widening is recorded
// (record_widened_fallback). Any other failure, or one no widening cures, is rethrown as the
// first run raised it. `names_a_device`: the op creates on a named device, so no meta run.
void run_widening_unsupported_dtypes(const c10::OperatorHandle& op, torch::jit::Stack* stack,
                                     const std::string& name, bool names_a_device,
                                     const std::function<void(torch::jit::Stack*)>& host_run);

}  // namespace openneuron::bridge
