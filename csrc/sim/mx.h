// Microscaling (OCP MX) on NeuronCore-v4: quantizing bf16/fp16 tiles to MXFP8 with one shared
// power-of-two scale per group of 8 partitions × 4 values, and the Tensor engine's matmul of
// MX tiles with the scales applied as it multiplies. Semantics in isa.h (kQuantizeMx,
// kMatmulMx); the reference interpreter calls these.
#pragma once

#include <cstdint>

#include "sim/isa.h"
#include "sim/state.h"

namespace openneuron::sim {

// The partition that holds the scales of group row `group` (partitions 8·group .. 8·group+7 of
// the data): rows of four groups fill the first four partitions of each quadrant of 32.
inline int64_t mx_scale_partition(int64_t group) { return (group / 4) * 32 + group % 4; }

// What the values an MX type packs are: their own element type (fp8; fp4 has none here),
// largest finite value and largest unbiased exponent.
struct MxFormat {
  DType value_type;
  float max_value;
  int max_exponent;
};
MxFormat mx_format(DType packed);

void execute_quantize_mx(CoreState& state, const Instruction& instruction);
void execute_matmul_mx(CoreState& state, const Instruction& instruction);

}  // namespace openneuron::sim
