// Deliberately wrong epilogues, for tests only: they prove that the accuracy checks of compiled
// code (the float64 rule, the compile fuzzer, the bitwise mode's equality) catch a fused kernel
// that computes the wrong thing. OPENNEURON_COMPILE_FAULT names one; unset (always, outside
// those tests) it is kNone and nothing changes.
#pragma once

#include <cstdlib>
#include <cstring>

namespace openneuron::compiler {

enum class EpilogueFault {
  kNone,
  kDropBias,    // "drop_bias": addmm / conv epilogues ignore their bias
  kWrongScale,  // "wrong_scale": the product is scaled by 1.001 (a subtle error)
  kSkipBody,    // "skip_body": the product is stored, the elementwise epilogue never runs
};

// Read at each epilogue run (a getenv per GEMM), so a test can switch it within one process.
inline EpilogueFault epilogue_fault() {
  const char* name = std::getenv("OPENNEURON_COMPILE_FAULT");
  if (name == nullptr || *name == '\0') return EpilogueFault::kNone;
  if (std::strcmp(name, "drop_bias") == 0) return EpilogueFault::kDropBias;
  if (std::strcmp(name, "wrong_scale") == 0) return EpilogueFault::kWrongScale;
  if (std::strcmp(name, "skip_body") == 0) return EpilogueFault::kSkipBody;
  return EpilogueFault::kNone;
}

}  // namespace openneuron::compiler
