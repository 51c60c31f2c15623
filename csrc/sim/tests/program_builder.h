// Builds small programs for the simulator's tests.
#pragma once

#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "sim/isa.h"
#include "sim/simulator.h"

namespace openneuron::sim::testing {

class ProgramBuilder {
 public:
  ProgramBuilder() { program_.source = "kernel.py"; }

  // An HBM tensor of `elements` elements; `input` ones are written before the kernel starts.
  int32_t hbm(const std::string& name, DType dtype, int64_t elements, bool input) {
    Buffer buffer;
    buffer.name = name;
    buffer.memory = Memory::kHbm;
    buffer.dtype = dtype;
    buffer.bytes_per_partition = elements * dtype_size(dtype);
    buffer.initialized = input;
    buffer.line = next_line_;
    program_.buffers.push_back(buffer);
    return static_cast<int32_t>(program_.buffers.size() - 1);
  }

  // An on-chip buffer of `partitions` × `free_elements`.
  int32_t tile(const std::string& name, Memory memory, DType dtype, int64_t partitions,
               int64_t free_elements) {
    Buffer buffer;
    buffer.name = name;
    buffer.memory = memory;
    buffer.dtype = dtype;
    buffer.partitions = partitions;
    buffer.bytes_per_partition = free_elements * dtype_size(dtype);
    buffer.line = next_line_;
    program_.buffers.push_back(buffer);
    return static_cast<int32_t>(program_.buffers.size() - 1);
  }

  // A row-major pattern over a whole buffer of `shape` (on-chip: shape[0] is partitions).
  AccessPattern ap(int32_t buffer, std::initializer_list<int64_t> shape, int64_t offset = 0,
                   int32_t start_partition = 0) const {
    AccessPattern result;
    result.buffer = buffer;
    result.dtype = program_.buffers[buffer].dtype;
    result.offset = offset;
    result.start_partition = start_partition;
    result.rank = static_cast<int32_t>(shape.size());
    const bool on_chip = program_.buffers[buffer].memory != Memory::kHbm;
    std::vector<int64_t> sizes(shape);
    int64_t stride = 1;
    for (int d = result.rank - 1; d >= 0; --d) {
      result.dims[d].size = sizes[d];
      result.dims[d].stride = (on_chip && d == 0) ? 1 : stride;
      stride *= sizes[d];
    }
    return result;
  }

  Instruction& add(Opcode opcode, AccessPattern dst, std::initializer_list<AccessPattern> srcs) {
    Instruction instruction;
    instruction.opcode = opcode;
    instruction.engine = default_engine(opcode);
    instruction.dst = dst;
    int s = 0;
    for (const auto& src : srcs) instruction.src[s++] = src;
    instruction.line = next_line_++;
    program_.instructions.push_back(instruction);
    return program_.instructions.back();
  }

  Program& program() { return program_; }

 private:
  Program program_;
  int32_t next_line_ = 10;
};

inline std::vector<float> random_floats(size_t count, uint32_t seed, float low = -2.0f,
                                        float high = 2.0f) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> distribution(low, high);
  std::vector<float> values(count);
  for (auto& v : values) v = distribution(generator);
  return values;
}

// The elements of an HBM buffer as fp32.
inline std::vector<float> read_floats(const Simulator& simulator, int32_t buffer) {
  const auto bytes = simulator.hbm(buffer);
  const DType dtype = simulator.program().buffers[buffer].dtype;
  const int size = dtype_size(dtype);
  std::vector<float> values(bytes.size() / size);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = load_element(dtype, bytes.data() + i * size);
  return values;
}

// Writes fp32 values into an HBM input of any dtype.
inline void set_floats(Simulator& simulator, int32_t buffer, const std::vector<float>& values) {
  const DType dtype = simulator.program().buffers[buffer].dtype;
  const int size = dtype_size(dtype);
  std::vector<uint8_t> bytes(values.size() * size);
  for (size_t i = 0; i < values.size(); ++i)
    store_element(dtype, bytes.data() + i * size, values[i]);
  simulator.set_input(buffer, bytes.data(), bytes.size());
}

}  // namespace openneuron::sim::testing
