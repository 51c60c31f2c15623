// The host fallback: runs an op without a native kernel on the CPU, visibly.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/CPUFallback.h>

#include <string>

namespace openneuron::bridge {

// Boxed kernel registered for every op the device does not implement. Counts the run,
// warns the first time per op, refuses in strict mode (NotImplementedError naming the
// op), rejects mixed-device inputs, and otherwise runs the CPU kernel on host copies.
// Where the CPU kernel lacks an input's dtype (its "not implemented for 'T'" error) and CUDA
// has it, the op runs at the nearest wider dtype the CPU has and its results are rounded
// once to the dtypes the op returns for the original inputs; recorded per (op, dtype).
void host_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// The op's name as the fallback reports it: "aten::add.Tensor".
std::string full_name(const c10::OperatorHandle& op);

// Turns strict mode on or off for this process (initially OPENNEURON_STRICT).
void set_strict_mode(bool strict);
bool strict_mode();

// Turns the fallback's dtype widening on (the default) or off (tests prove it is needed).
void set_fallback_widening(bool enabled);
bool fallback_widening();

}  // namespace openneuron::bridge

// From inside a native kernel, sends this call (e.g. a float64 input) to host_fallback.
#define OPENNEURON_FALLBACK(op, ...)                                                      \
  at::native::call_fallback_fn<&::openneuron::bridge::host_fallback, at::_ops::op>::call( \
      __VA_ARGS__)
