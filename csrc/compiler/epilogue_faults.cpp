// The test-only epilogue fault, held in an atomic (see epilogue_faults.h).
#include "compiler/epilogue_faults.h"

#include <atomic>
#include <cstdlib>
#include <stdexcept>

namespace openneuron::compiler {

namespace {

// An unknown name in the environment is ignored (the library must still load); the setter,
// which a test calls, rejects it.
EpilogueFault from_environment() {
  const char* name = std::getenv("OPENNEURON_COMPILE_FAULT");
  if (name == nullptr) return EpilogueFault::kNone;
  try {
    return parse_epilogue_fault(name);
  } catch (const std::invalid_argument&) {
    return EpilogueFault::kNone;
  }
}

std::atomic<EpilogueFault>& current_fault() {
  static std::atomic<EpilogueFault> fault{from_environment()};
  return fault;
}

// Reads the environment when the library loads, not at the first fused GEMM.
[[maybe_unused]] const bool read_at_load = (current_fault(), true);

}  // namespace

EpilogueFault epilogue_fault() { return current_fault().load(std::memory_order_relaxed); }

void set_epilogue_fault(EpilogueFault fault) {
  current_fault().store(fault, std::memory_order_relaxed);
}

EpilogueFault parse_epilogue_fault(const std::string& name) {
  if (name.empty() || name == "none") return EpilogueFault::kNone;
  if (name == "drop_bias") return EpilogueFault::kDropBias;
  if (name == "wrong_scale") return EpilogueFault::kWrongScale;
  if (name == "skip_body") return EpilogueFault::kSkipBody;
  throw std::invalid_argument("unknown compile fault '" + name +
                              "' (expected none, drop_bias, wrong_scale or skip_body)");
}

const char* epilogue_fault_name(EpilogueFault fault) {
  switch (fault) {
    case EpilogueFault::kDropBias:
      return "drop_bias";
    case EpilogueFault::kWrongScale:
      return "wrong_scale";
    case EpilogueFault::kSkipBody:
      return "skip_body";
    case EpilogueFault::kNone:
      break;
  }
  return "none";
}

}  // namespace openneuron::compiler
