#include "sim/mx.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "sim/element_walk.h"
#include "sim/errors.h"

namespace openneuron::sim {

namespace {

constexpr int kGroupPartitions = 8;  // an MX scaling group: 8 partitions × 4 values
constexpr int kGroupValues = 4;

[[noreturn]] void unwritten(const CoreState& state, const Instruction& instruction,
                            const AccessPattern& ap, int64_t element) {
  const Program& program = state.program();
  throw SimError(rule::kUninitializedRead,
                 std::string(opcode_name(instruction.opcode)) + " reads element " +
                     std::to_string(element) + " of '" + program.buffers[ap.buffer].name +
                     "', which was never written",
                 program.source, instruction.line);
}

// Every element's bytes, row-major. With `checked`, a never-written element is an error.
std::vector<uint8_t> gather_bytes(CoreState& state, const Instruction& instruction,
                                  const AccessPattern& ap, bool checked) {
  const int size = dtype_size(ap.dtype);
  std::vector<uint8_t> bytes(static_cast<size_t>(ap.elements() * size));
  if (checked && !state.all_written(ap)) {
    for (int64_t n = 0; n < ap.elements(); ++n) {
      if (!state.element_written(ap, n)) unwritten(state, instruction, ap, n);
    }
  }
  for_each_element(state, ap, [&](const uint8_t* data, int64_t n) {
    std::memcpy(bytes.data() + n * size, data, static_cast<size_t>(size));
  });
  return bytes;
}

// Value q (0..3) of a packed element's bytes.
float packed_value(DType packed, const uint8_t* element, int q) {
  if (packed == DType::kFloat4E2M1x4) {
    static constexpr float kMagnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    const int nibble = (element[q / 2] >> (4 * (q % 2))) & 0xF;
    const float magnitude = kMagnitudes[nibble & 7];
    return (nibble & 8) ? -magnitude : magnitude;
  }
  return load_element(mx_format(packed).value_type, element + q);
}

// The scale byte of scaling group (group row of partition k, column) of a data operand.
uint8_t scale_of(CoreState& state, const Instruction& instruction, const AccessPattern& scales,
                 const std::vector<uint8_t>& bytes, int64_t k, int64_t column) {
  const int64_t position = mx_scale_partition(k / kGroupPartitions) * scales.free_size() + column;
  if (!state.element_written(scales, position)) unwritten(state, instruction, scales, position);
  return bytes[static_cast<size_t>(position)];
}

// An operand [K, F] of packed values with its scales, as fp32 values [K, F, 4].
std::vector<float> dequantized(CoreState& state, const Instruction& instruction,
                               const AccessPattern& data, const AccessPattern& scales) {
  const int64_t k_size = data.partitions(), f_size = data.free_size();
  const int size = dtype_size(data.dtype);
  const auto packed = gather_bytes(state, instruction, data, true);
  const auto scale_bytes = gather_bytes(state, instruction, scales, false);
  std::vector<float> values(static_cast<size_t>(k_size * f_size * kGroupValues));
  for (int64_t k = 0; k < k_size; ++k) {
    for (int64_t f = 0; f < f_size; ++f) {
      const int exponent = scale_of(state, instruction, scales, scale_bytes, k, f) - 127;
      const uint8_t* element = packed.data() + (k * f_size + f) * size;
      for (int q = 0; q < kGroupValues; ++q) {
        values[(k * f_size + f) * kGroupValues + q] =
            std::ldexp(packed_value(data.dtype, element, q), exponent);
      }
    }
  }
  return values;
}

}  // namespace

MxFormat mx_format(DType packed) {
  switch (packed) {
    case DType::kFloat8E4M3x4:
      return {DType::kFloat8E4M3, 448.0f, 8};
    case DType::kFloat8E5M2x4:
      return {DType::kFloat8E5M2, 57344.0f, 15};
    default:  // fp4 e2m1: decoded by table (packed_value)
      return {DType::kCount, 6.0f, 2};
  }
}

void execute_quantize_mx(CoreState& state, const Instruction& instruction) {
  const AccessPattern& src = instruction.src[0];
  const AccessPattern& dst = instruction.dst;
  const AccessPattern& scales = instruction.dst2;
  const int64_t p_size = src.partitions(), f_size = src.free_size();
  const int64_t columns = f_size / kGroupValues;
  std::vector<float> values(static_cast<size_t>(src.elements()));
  {
    const auto bytes = gather_bytes(state, instruction, src, true);
    const int size = dtype_size(src.dtype);
    for (int64_t n = 0; n < src.elements(); ++n)
      values[n] = load_element(src.dtype, bytes.data() + n * size);
  }
  const MxFormat format = mx_format(dst.dtype);
  std::vector<uint8_t> packed(static_cast<size_t>(p_size * f_size));
  std::vector<uint8_t> scale_rows(static_cast<size_t>(p_size / kGroupPartitions * columns));
  for (int64_t group = 0; group < p_size / kGroupPartitions; ++group) {
    for (int64_t column = 0; column < columns; ++column) {
      int largest = 0;  // the largest fp32 exponent field in the group
      for (int64_t i = 0; i < kGroupPartitions; ++i) {
        for (int q = 0; q < kGroupValues; ++q) {
          uint32_t bits;
          const float v = values[(group * kGroupPartitions + i) * f_size + column * 4 + q];
          std::memcpy(&bits, &v, 4);
          largest = std::max(largest, static_cast<int>((bits >> 23) & 0xFF));
        }
      }
      const auto scale = static_cast<uint8_t>(largest - format.max_exponent);  // wraps
      scale_rows[group * columns + column] = scale;
      for (int64_t i = 0; i < kGroupPartitions; ++i) {
        for (int q = 0; q < kGroupValues; ++q) {
          const int64_t n = (group * kGroupPartitions + i) * f_size + column * 4 + q;
          double x = std::ldexp(static_cast<double>(values[n]), 127 - scale);
          x = std::fmax(-format.max_value, std::fmin(format.max_value, x));  // OCP saturation
          store_element(format.value_type, &packed[n], static_cast<float>(x));
        }
      }
    }
  }
  for_each_element(state, dst, [&](uint8_t* data, int64_t n) {
    std::memcpy(data, packed.data() + n * kGroupValues, kGroupValues);
  });
  state.mark_written(dst);
  // Each group row's scales go to its own partition; the partitions between stay unwritten.
  for (int64_t group = 0; group < p_size / kGroupPartitions; ++group) {
    AccessPattern row = scales;
    row.start_partition += static_cast<int32_t>(mx_scale_partition(group));
    row.dims[0].size = 1;
    row.dims[1].size = columns;
    for_each_element(state, row,
                     [&](uint8_t* data, int64_t n) { *data = scale_rows[group * columns + n]; });
    state.mark_written(row);
  }
}

void execute_matmul_mx(CoreState& state, const Instruction& instruction) {
  const AccessPattern& stationary = instruction.src[0];
  const AccessPattern& moving = instruction.src[1];
  const AccessPattern& dst = instruction.dst;
  const int64_t k_size = stationary.partitions();
  const int64_t m_size = stationary.free_size(), n_size = moving.free_size();
  const auto a = dequantized(state, instruction, stationary, instruction.src[2]);
  const auto b = dequantized(state, instruction, moving, instruction.src[3]);
  std::vector<float> out(static_cast<size_t>(m_size * n_size), 0.0f);
  if (instruction.accumulate) {
    const auto previous = gather_bytes(state, instruction, dst, true);
    const int size = dtype_size(dst.dtype);
    for (size_t n = 0; n < out.size(); ++n)
      out[n] = load_element(dst.dtype, previous.data() + n * size);
  }
  for (int64_t m = 0; m < m_size; ++m) {
    for (int64_t n = 0; n < n_size; ++n) {
      float sum = out[m * n_size + n];
      for (int64_t k = 0; k < k_size; ++k) {
        const float* x = &a[(k * m_size + m) * kGroupValues];
        const float* y = &b[(k * n_size + n) * kGroupValues];
        for (int q = 0; q < kGroupValues; ++q) sum = std::fma(x[q], y[q], sum);
      }
      out[m * n_size + n] = sum;
    }
  }
  for_each_element(state, dst, [&](uint8_t* data, int64_t n) {
    store_element(dst.dtype, data, out[static_cast<size_t>(n)]);
  });
  state.mark_written(dst);
}

}  // namespace openneuron::sim
