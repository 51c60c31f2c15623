#include "aten/core/runtime_errors.h"

#include <c10/util/Exception.h>

namespace openneuron::bridge {

void rethrow_as_torch_error(const runtime::Error& error) {
  if (dynamic_cast<const runtime::OutOfMemoryError*>(&error)) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, error.what());
  }
  if (dynamic_cast<const runtime::QueuedWorkError*>(&error)) {
    throw c10::AcceleratorError({__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, 1,
                                error.what());
  }
  TORCH_CHECK(false, error.what());
}

}  // namespace openneuron::bridge
