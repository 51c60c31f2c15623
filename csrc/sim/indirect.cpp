#include "sim/indirect.h"

#include <cstring>
#include <string>

#include "sim/errors.h"

namespace openneuron::sim {

namespace {

// The integer of type T stored at data (unaligned).
template <typename T>
int64_t load_integer(const uint8_t* data) {
  T v;
  std::memcpy(&v, data, sizeof(v));
  return static_cast<int64_t>(v);
}

// An integer element of an index tile, exactly (no trip through fp32).
int64_t load_index(DType dtype, const uint8_t* data) {
  switch (dtype) {
    case DType::kInt8:
      return load_integer<int8_t>(data);
    case DType::kUInt8:
    case DType::kBool:
      return data[0];
    case DType::kInt16:
      return load_integer<int16_t>(data);
    case DType::kUInt16:
      return load_integer<uint16_t>(data);
    case DType::kInt32:
      return load_integer<int32_t>(data);
    case DType::kUInt32:
      return load_integer<uint32_t>(data);
    default:  // the rules admit integer index tiles only
      return static_cast<int64_t>(load_element(dtype, data));
  }
}

// The index values in row-major order, each element checked written.
std::vector<int64_t> read_indices(CoreState& state, const Instruction& ins) {
  const AccessPattern& ap = ins.indirect.index;
  const Program& program = state.program();
  const int64_t total = ap.elements();
  const int64_t size = dtype_size(ap.dtype);
  std::vector<int64_t> values(static_cast<size_t>(total));
  int64_t index[kMaxDims] = {0, 0, 0, 0, 0};
  for (int64_t n = 0; n < total; ++n) {
    if (!state.element_written(ap, n)) {
      throw SimError(rule::kUninitializedRead,
                     "dma_copy reads run-time offset " + std::to_string(n) + " from '" +
                         program.buffers[ap.buffer].name + "' (created at line " +
                         std::to_string(program.buffers[ap.buffer].line) +
                         "), which was never written",
                     program.source, ins.line);
    }
    int64_t offset = ap.offset;
    for (int d = 1; d < ap.rank; ++d) offset += index[d] * ap.dims[d].stride;
    values[n] = load_index(ap.dtype, state.row(ap, index[0]) + offset * size);
    for (int d = ap.rank - 1; d >= 0; --d) {
      if (++index[d] < ap.dims[d].size) break;
      index[d] = 0;
    }
  }
  return values;
}

// Row `row` of the operand that moves with the indirect one: its first dimension's index fixed.
AccessPattern row_of(const Program& program, const AccessPattern& ap, int64_t row) {
  AccessPattern result = ap;
  if (program.buffers[ap.buffer].memory == Memory::kHbm) {
    result.offset += row * ap.dims[0].stride;
  } else {
    result.start_partition += static_cast<int32_t>(row * ap.dims[0].stride);
  }
  result.dims[0].size = 1;
  return result;
}

// Whether every element of the HBM pattern `ap` lies inside its tensor.
bool inside_tensor(const Program& program, const AccessPattern& ap) {
  const auto [low, high] = ap.offset_span(0);
  return low >= 0 &&
         (high + 1) * dtype_size(ap.dtype) <= program.buffers[ap.buffer].bytes_per_partition;
}

}  // namespace

AccessPattern at_index(const Instruction& ins, int64_t value) {
  AccessPattern ap = ins.indirect.on_dst ? ins.dst : ins.src[0];
  ap.offset += value * ins.indirect.stride;
  if (ins.indirect.kind == IndirectKind::kVector) ap.dims[0] = Dim{1, 0};
  return ap;
}

std::vector<Instruction> resolve_indirect(CoreState& state, const Instruction& ins) {
  const IndirectOffset& indirect = ins.indirect;
  const Program& program = state.program();
  const std::vector<int64_t> values = read_indices(state, ins);
  std::vector<Instruction> plain;
  plain.reserve(values.size());
  for (size_t row = 0; row < values.size(); ++row) {
    const int64_t value = values[row];
    if (value < 0 || value >= indirect.bound) {
      if (indirect.skip_out_of_bounds) continue;
      const AccessPattern& moved = indirect.on_dst ? ins.dst : ins.src[0];
      throw SimError(
          rule::kOutOfBounds,
          "dma_copy: run-time offset " + std::to_string(value) +
              (indirect.kind == IndirectKind::kVector ? " (row " + std::to_string(row) + ")"
                                                      : std::string()) +
              " read from '" + program.buffers[indirect.index.buffer].name + "' is outside [0, " +
              std::to_string(indirect.bound) + ") for '" + program.buffers[moved.buffer].name +
              "' (oob_mode=skip leaves such transfers out)",
          program.source, ins.line);
    }
    Instruction one = ins;
    one.indirect = IndirectOffset{};
    AccessPattern& moved = indirect.on_dst ? one.dst : one.src[0];
    AccessPattern& other = indirect.on_dst ? one.src[0] : one.dst;
    moved = at_index(ins, value);
    if (!inside_tensor(program, moved)) {
      if (indirect.skip_out_of_bounds) continue;
      throw SimError(
          rule::kOutOfBounds,
          "dma_copy: run-time offset " + std::to_string(value) +
              (indirect.kind == IndirectKind::kVector ? " (row " + std::to_string(row) + ")"
                                                      : std::string()) +
              " read from '" + program.buffers[indirect.index.buffer].name +
              "' moves the access past the end of '" + program.buffers[moved.buffer].name + "' (" +
              std::to_string(program.buffers[moved.buffer].bytes_per_partition) + " B)",
          program.source, ins.line);
    }
    if (indirect.kind == IndirectKind::kVector)
      other = row_of(program, other, static_cast<int64_t>(row));
    plain.push_back(one);
  }
  return plain;
}

AccessPattern indirect_reach(const Program& program, const Instruction& ins,
                             const AccessPattern& ap) {
  const IndirectOffset& indirect = ins.indirect;
  if (!indirect.active() || &ap != (indirect.on_dst ? &ins.dst : &ins.src[0])) return ap;
  AccessPattern reach = ap;
  if (indirect.kind == IndirectKind::kVector) {
    reach.dims[0] = Dim{indirect.bound, indirect.stride};
    return reach;
  }
  if (ap.rank < kMaxDims) {
    for (int d = ap.rank; d > 0; --d) reach.dims[d] = ap.dims[d - 1];
    reach.dims[0] = Dim{indirect.bound, indirect.stride};
    reach.rank = ap.rank + 1;
    return reach;
  }
  // Five dimensions already: the whole tensor.
  const int64_t elements = program.buffers[ap.buffer].bytes_per_partition / dtype_size(ap.dtype);
  reach.offset = 0;
  reach.rank = 1;
  reach.dims[0] = Dim{elements, 1};
  return reach;
}

}  // namespace openneuron::sim
