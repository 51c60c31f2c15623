// Process-wide state of the dense-math libraries, created up front (declared apart from
// dnnl_runtime.h so that callers need not include oneDNN's headers).
#pragma once

namespace openneuron::kernels {

// Creates oneDNN's process-wide state (the engine, the primitive cache and ISA detection) by
// building one tiny matmul primitive. Call it before anything registers an exit handler that
// stops kernel threads (the device runtime does, at its first use): oneDNN creates that state
// lazily, and state created after such a handler is destroyed before the handler runs, under a
// kernel thread that may still be creating a primitive. Never throws.
void initialize_dnnl_process_state() noexcept;

}  // namespace openneuron::kernels
