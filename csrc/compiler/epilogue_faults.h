// Deliberately wrong epilogues, for tests only: they prove that the accuracy checks of compiled
// code (the float64 rule, the compile fuzzer, the bitwise mode's equality) catch a fused kernel
// that computes the wrong thing. Outside those tests the fault is kNone and nothing changes.
#pragma once

#include <string>

namespace openneuron::compiler {

enum class EpilogueFault {
  kNone,
  kDropBias,    // "drop_bias": addmm / conv epilogues ignore their bias
  kWrongScale,  // "wrong_scale": the product is scaled by 1.001 (a subtle error)
  kSkipBody,    // "skip_body": the product is stored, the elementwise epilogue never runs
};

// The fault in force: OPENNEURON_COMPILE_FAULT read once when the library loads, or the last
// set_epilogue_fault. One relaxed atomic load, so every fused GEMM and convolution may ask.
EpilogueFault epilogue_fault();

// Sets the fault for the whole process (tests switch it between compiled runs).
void set_epilogue_fault(EpilogueFault fault);

// "" or "none" -> kNone, "drop_bias", "wrong_scale", "skip_body"; throws std::invalid_argument
// naming the accepted values for anything else.
EpilogueFault parse_epilogue_fault(const std::string& name);

// The name parse_epilogue_fault accepts for `fault` ("none" for kNone).
const char* epilogue_fault_name(EpilogueFault fault);

}  // namespace openneuron::compiler
