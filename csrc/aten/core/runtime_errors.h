// Turns runtime exceptions into the c10 errors that reach Python as the matching type.
#pragma once

#include "runtime/errors.h"

namespace openneuron::bridge {

// Rethrows the runtime error being handled as a c10 error: OutOfMemoryError ->
// torch.OutOfMemoryError, QueuedWorkError -> torch.AcceleratorError, others -> RuntimeError.
[[noreturn]] void rethrow_as_torch_error(const runtime::Error& error);

}  // namespace openneuron::bridge

// Runs a block of runtime calls, translating any runtime::Error into a c10 error.
#define OPENNEURON_RUNTIME_CALL(...)                         \
  do {                                                       \
    try {                                                    \
      __VA_ARGS__;                                           \
    } catch (const ::openneuron::runtime::Error& error__) {  \
      ::openneuron::bridge::rethrow_as_torch_error(error__); \
    }                                                        \
  } while (0)
