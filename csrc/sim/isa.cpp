#include "sim/isa.h"

namespace openneuron::sim {

namespace {

template <typename Enum, size_t N>
const char* lookup(const char* const (&names)[N], Enum value) {
  const auto index = static_cast<size_t>(value);
  return index < N ? names[index] : "?";
}

}  // namespace

const char* memory_name(Memory memory) {
  static const char* const kNames[] = {"hbm", "sbuf", "psum"};
  return lookup(kNames, memory);
}

const char* engine_name(Engine engine) {
  static const char* const kNames[] = {"tensor", "vector", "scalar", "gpsimd", "dma"};
  return lookup(kNames, engine);
}

const char* opcode_name(Opcode opcode) {
  static const char* const kNames[] = {"nc_matmul",
                                       "nc_transpose",
                                       "tensor_tensor",
                                       "tensor_scalar",
                                       "tensor_reduce",
                                       "tensor_copy",
                                       "memset",
                                       "select",
                                       "tensor_tensor_scan",
                                       "bn_stats",
                                       "bn_aggr",
                                       "activation",
                                       "iota",
                                       "affine_select",
                                       "tensor_partition_reduce",
                                       "dma_copy",
                                       "max8",
                                       "nc_find_index8",
                                       "nc_stream_shuffle",
                                       "nonzero_with_count",
                                       "nc_match_replace8",
                                       "range_select",
                                       "core_barrier",
                                       "dma_compute",
                                       "nc_n_gather",
                                       "tensor_copy_predicated",
                                       "quantize_mx",
                                       "nc_matmul_mx"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(Opcode::kCount));
  return lookup(kNames, opcode);
}

const char* alu_op_name(AluOp op) {
  static const char* const kNames[] = {
      "bypass",        "add",         "subtract",   "multiply",   "divide",      "maximum",
      "minimum",       "power",       "mod",        "abs_max",    "equal",       "not_equal",
      "greater_equal", "greater",     "less_equal", "less",       "logical_and", "logical_or",
      "logical_xor",   "bitwise_and", "bitwise_or", "bitwise_xor"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(AluOp::kCount));
  return lookup(kNames, op);
}

const char* activation_name(ActivationFunction function) {
  static const char* const kNames[] = {"copy",
                                       "exp",
                                       "log",
                                       "tanh",
                                       "sigmoid",
                                       "relu",
                                       "gelu",
                                       "gelu_apprx_tanh",
                                       "silu",
                                       "sqrt",
                                       "rsqrt",
                                       "reciprocal",
                                       "square",
                                       "abs",
                                       "sin",
                                       "cos",
                                       "softplus",
                                       "erf",
                                       "sign",
                                       "negative",
                                       "mish",
                                       "arctan",
                                       "gelu_apprx_sigmoid",
                                       "gelu_apprx_sigmoid_dx",
                                       "silu_dx"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) ==
                static_cast<size_t>(ActivationFunction::kCount));
  return lookup(kNames, function);
}

std::pair<int64_t, int64_t> AccessPattern::offset_span(int first_dim) const {
  int64_t low = offset, high = offset;
  for (int d = first_dim; d < rank; ++d) {
    const int64_t span = (dims[d].size - 1) * dims[d].stride;
    (span < 0 ? low : high) += span;
  }
  return {low, high};
}

int64_t AccessPattern::free_size() const {
  int64_t size = 1;
  for (int d = 1; d < rank; ++d) size *= dims[d].size;
  return size;
}

Engine default_engine(Opcode opcode) {
  switch (opcode) {
    case Opcode::kMatmul:
    case Opcode::kTranspose:
    case Opcode::kMatmulMx:
      return Engine::kTensor;
    case Opcode::kActivation:
      return Engine::kScalar;
    case Opcode::kIota:
    case Opcode::kAffineSelect:
    case Opcode::kPartitionReduce:
    case Opcode::kNonzeroWithCount:
    case Opcode::kNGather:
      return Engine::kGpSimd;
    case Opcode::kDmaCopy:
    case Opcode::kDmaCompute:
      return Engine::kDma;
    default:
      return Engine::kVector;
  }
}

int stream_shuffle_source(const Instruction& instruction, int64_t d) {
  const int i = static_cast<int>(d % 32);
  const auto word = static_cast<uint64_t>(instruction.pattern[i / 8]);
  const int mask = static_cast<int>((word >> (8 * (i % 8))) & 0xFF);
  if (mask == 255) return -1;
  return static_cast<int>(d / 32) * 32 + mask;
}

}  // namespace openneuron::sim
