// The host fallback for sparse COO tensors on the device: their indices and values live on the
// device, and no sparse kernel does; every sparse op runs on the CPU, visibly.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

namespace openneuron::bridge {

// Boxed kernel for the SparsePrivateUse1 key. Counts the run and warns once per op (as the
// dense fallback does), refuses in strict mode, moves sparse arguments to the host as sparse
// CPU tensors (indices and values copied) and dense ones as copies, runs the CPU's kernel,
// writes back arguments the op mutates (a sparse one takes the new indices and values), and
// returns results on the device. A factory's neuron device= becomes the CPU for the host run.
void sparse_host_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// Registers sparse_host_fallback as the SparsePrivateUse1 kernel of every op the CPU has a
// sparse kernel for and the device has none: a backend fallback alone would lose to the ops'
// generic (CompositeExplicitAutograd) kernels, which know nothing of sparse layouts (clone,
// copy_, zero_). Once per process, after every static registration (the module's init).
void register_sparse_host_kernels();

}  // namespace openneuron::bridge
