#include "sim/interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "sim/alu.h"
#include "sim/element_walk.h"
#include "sim/errors.h"
#include "sim/matmul_kernel.h"
#include "sim/mx.h"

namespace openneuron::sim {

namespace {

[[noreturn]] void uninitialized(const CoreState& state, const Instruction& instruction,
                                const AccessPattern& ap, int64_t element) {
  const Program& program = state.program();
  throw SimError(rule::kUninitializedRead,
                 std::string(opcode_name(instruction.opcode)) + " reads element " +
                     std::to_string(element) + " of '" + program.buffers[ap.buffer].name +
                     "' (created at line " + std::to_string(program.buffers[ap.buffer].line) +
                     "), which was never written",
                 program.source, instruction.line);
}

// Moves operands element by element through their access patterns; every element read is
// checked on its own.
struct ElementAccess {
  static std::vector<float> read(CoreState& state, const Instruction& instruction,
                                 const AccessPattern& ap) {
    std::vector<float> values(static_cast<size_t>(ap.elements()));
    for_each_element(state, ap, [&](const uint8_t* data, int64_t n) {
      if (!state.element_written(ap, n)) uninitialized(state, instruction, ap, n);
      values[n] = load_element(ap.dtype, data);
    });
    return values;
  }

  static void write(CoreState& state, const AccessPattern& ap, const float* values) {
    for_each_element(state, ap,
                     [&](uint8_t* data, int64_t n) { store_element(ap.dtype, data, values[n]); });
    state.mark_written(ap);
  }

  // Same-dtype moves keep the bits (integers wider than fp32's mantissa stay exact).
  static void copy_bits(CoreState& state, const Instruction& instruction, const AccessPattern& dst,
                        const AccessPattern& src) {
    const int size = dtype_size(src.dtype);
    std::vector<uint8_t> bytes(static_cast<size_t>(src.elements() * size));
    for_each_element(state, src, [&](const uint8_t* data, int64_t n) {
      if (!state.element_written(src, n)) uninitialized(state, instruction, src, n);
      std::memcpy(bytes.data() + n * size, data, size);
    });
    for_each_element(state, dst, [&](uint8_t* data, int64_t n) {
      std::memcpy(data, bytes.data() + n * size, size);
    });
    state.mark_written(dst);
  }
};

// Walks an operand as rows: for each partition (HBM: each index of the outer dims), runs of
// the innermost dimension, converted a run at a time. The written-state is checked and marked
// once per operand.
struct RowAccess {
  [[noreturn]] static void unwritten(CoreState& state, const Instruction& instruction,
                                     const AccessPattern& ap) {
    report_unwritten(state, instruction, ap);
  }

  template <typename Visit>
  static void for_each_run(CoreState& state, const AccessPattern& ap, Visit&& visit) {
    const bool on_chip = state.program().buffers[ap.buffer].memory != Memory::kHbm;
    const int64_t size = dtype_size(ap.dtype);
    const int inner = ap.rank - 1;
    const int64_t run = ap.dims[inner].size;
    const int64_t stride = ap.dims[inner].stride;
    const int first_outer = on_chip ? 1 : 0;
    const int64_t partitions = on_chip ? ap.dims[0].size : 1;
    int64_t outer_count = 1;
    for (int d = first_outer; d < inner; ++d) outer_count *= ap.dims[d].size;
    if (inner == 0 && on_chip) outer_count = 1;
    int64_t position = 0;
    for (int64_t p = 0; p < partitions; ++p) {
      uint8_t* data = state.row(ap, p);
      int64_t index[kMaxDims] = {0, 0, 0, 0, 0};
      for (int64_t o = 0; o < outer_count; ++o) {
        int64_t offset = ap.offset;
        for (int d = first_outer; d < inner; ++d) offset += index[d] * ap.dims[d].stride;
        if (inner == 0 && on_chip) {
          visit(data + offset * size, int64_t{1}, int64_t{0}, position);
          position += 1;
        } else {
          visit(data + offset * size, run, stride * size, position);
          position += run;
        }
        for (int d = inner - 1; d >= first_outer; --d) {
          if (++index[d] < ap.dims[d].size) break;
          index[d] = 0;
        }
      }
    }
  }

  static void check(CoreState& state, const Instruction& instruction, const AccessPattern& ap) {
    if (!state.all_written(ap)) unwritten(state, instruction, ap);
  }

  static std::vector<float> read(CoreState& state, const Instruction& instruction,
                                 const AccessPattern& ap) {
    check(state, instruction, ap);
    std::vector<float> values(static_cast<size_t>(ap.elements()));
    const int64_t size = dtype_size(ap.dtype);
    for_each_run(state, ap, [&](uint8_t* data, int64_t count, int64_t step, int64_t position) {
      if (step == size) {
        load_row(ap.dtype, data, values.data() + position, count);
        return;
      }
      for (int64_t i = 0; i < count; ++i)
        values[position + i] = load_element(ap.dtype, data + i * step);
    });
    return values;
  }

  static void write(CoreState& state, const AccessPattern& ap, const float* values) {
    const int64_t size = dtype_size(ap.dtype);
    for_each_run(state, ap, [&](uint8_t* data, int64_t count, int64_t step, int64_t position) {
      if (step == size) {
        store_row(ap.dtype, values + position, data, count);
        return;
      }
      for (int64_t i = 0; i < count; ++i)
        store_element(ap.dtype, data + i * step, values[position + i]);
    });
    state.mark_written(ap);
  }

  static void copy_bits(CoreState& state, const Instruction& instruction, const AccessPattern& dst,
                        const AccessPattern& src) {
    check(state, instruction, src);
    // Gather raw bytes in row-major order, then scatter them.
    const int64_t size = dtype_size(src.dtype);
    std::vector<uint8_t> bytes(static_cast<size_t>(src.elements() * size));
    for_each_run(state, src, [&](uint8_t* data, int64_t count, int64_t step, int64_t position) {
      if (step == size) {
        std::memcpy(bytes.data() + position * size, data, static_cast<size_t>(count * size));
      } else {
        for (int64_t i = 0; i < count; ++i)
          std::memcpy(bytes.data() + (position + i) * size, data + i * step, size);
      }
    });
    for_each_run(state, dst, [&](uint8_t* data, int64_t count, int64_t step, int64_t position) {
      if (step == size) {
        std::memcpy(data, bytes.data() + position * size, static_cast<size_t>(count * size));
      } else {
        for (int64_t i = 0; i < count; ++i)
          std::memcpy(data + i * step, bytes.data() + (position + i) * size, size);
      }
    });
    state.mark_written(dst);
  }
};

// Reads `ap`, which may hold never-written elements (poison): their row-major positions go to
// `*unwritten`. For instructions that carry such elements along instead of failing on them.
template <typename Access>
std::vector<float> read_carrying(CoreState& state, const Instruction& instruction,
                                 const AccessPattern& ap, std::vector<int64_t>* unwritten) {
  *unwritten = state.unwritten_elements(ap);
  if (unwritten->empty()) return Access::read(state, instruction, ap);
  state.mark_written(ap);  // exactly its footprint, undone element by element below
  auto values = Access::read(state, instruction, ap);
  for (const int64_t n : *unwritten) state.mark_element_unwritten(ap, n);
  return values;
}

// The value per partition of an optional [P,1] operand, else the immediate.
template <typename Access>
std::vector<float> per_partition(CoreState& state, const Instruction& instruction,
                                 const AccessPattern& operand, float immediate,
                                 int64_t partitions) {
  if (!operand.valid()) return std::vector<float>(static_cast<size_t>(partitions), immediate);
  return Access::read(state, instruction, operand);
}

void matmul_reference(const std::vector<float>& stationary, const std::vector<float>& moving,
                      int64_t k_size, int64_t m_size, int64_t n_size, std::vector<float>& out) {
  for (int64_t m = 0; m < m_size; ++m) {
    for (int64_t n = 0; n < n_size; ++n) {
      float sum = 0.0f;
      for (int64_t k = 0; k < k_size; ++k) {
        sum = std::fma(stationary[k * m_size + m], moving[k * n_size + n], sum);
      }
      out[m * n_size + n] = sum;
    }
  }
}

// max8's order: descending, NaN above everything.
bool ranks_above(float x, float y) { return (std::isnan(x) && !std::isnan(y)) || x > y; }

float tf32_input(DType dtype, float value) {
  return dtype == DType::kTFloat32 ? round_to(DType::kTFloat32, value) : value;
}

// An operand's raw element bytes in row-major order, and which of them were never written.
struct RawElements {
  std::vector<uint8_t> bytes;
  std::vector<char> unwritten;
};

RawElements read_raw(CoreState& state, const AccessPattern& ap) {
  const int64_t size = dtype_size(ap.dtype);
  RawElements raw{std::vector<uint8_t>(static_cast<size_t>(ap.elements() * size)),
                  std::vector<char>(static_cast<size_t>(ap.elements()), 0)};
  for (const int64_t n : state.unwritten_elements(ap)) raw.unwritten[n] = 1;
  for_each_element(state, ap, [&](const uint8_t* data, int64_t n) {
    std::memcpy(raw.bytes.data() + n * size, data, static_cast<size_t>(size));
  });
  return raw;
}

// nc_n_gather: dst[p, i] = data[p, indices[p, i]] with the bits unchanged.
void gather_in_partitions(CoreState& state, const Instruction& ins) {
  const AccessPattern& data = ins.src[0];
  const AccessPattern& indices = ins.src[1];
  const AccessPattern& dst = ins.dst;
  const int64_t partitions = dst.partitions(), count = dst.free_size(), width = data.free_size();
  const auto index = ElementAccess::read(state, ins, indices);
  const RawElements source = read_raw(state, data);
  const int64_t size = dtype_size(data.dtype);
  std::vector<uint8_t> out(static_cast<size_t>(dst.elements() * size));
  std::vector<int64_t> unwritten;
  for (int64_t p = 0; p < partitions; ++p) {
    for (int64_t i = 0; i < count; ++i) {
      const float value = index[p * count + i];
      if (!(value >= 0.0f && value < static_cast<float>(width))) {
        throw SimError(rule::kOutOfBounds,
                       "nc_n_gather index " + std::to_string(value) + " at partition " +
                           std::to_string(p) + " is outside the " + std::to_string(width) +
                           " elements of a data partition",
                       state.program().source, ins.line);
      }
      const int64_t from = p * width + static_cast<int64_t>(value);
      std::memcpy(out.data() + (p * count + i) * size, source.bytes.data() + from * size,
                  static_cast<size_t>(size));
      if (source.unwritten[from]) unwritten.push_back(p * count + i);
    }
  }
  for_each_element(state, dst, [&](uint8_t* where, int64_t n) {
    std::memcpy(where, out.data() + n * size, static_cast<size_t>(size));
  });
  state.mark_written(dst);
  for (const int64_t n : unwritten) state.mark_element_unwritten(dst, n);
}

// tensor_copy_predicated: only the elements the predicate selects change, bits and written-state.
void copy_predicated(CoreState& state, const Instruction& ins) {
  const AccessPattern& dst = ins.dst;
  const AccessPattern& src = ins.src[0];
  const auto predicate = ElementAccess::read(state, ins, ins.src[1]);
  const int64_t size = dtype_size(dst.dtype);
  std::vector<char> selected(predicate.size());
  for (size_t n = 0; n < predicate.size(); ++n)
    selected[n] = (predicate[n] != 0.0f) != ins.reverse0;
  RawElements source;
  if (src.valid()) source = read_raw(state, src);
  std::vector<uint8_t> scalar(static_cast<size_t>(size));
  if (!src.valid()) store_element(dst.dtype, scalar.data(), ins.imm0);
  std::vector<char> unwritten(selected.size(), 0);
  for (const int64_t n : state.unwritten_elements(dst)) unwritten[n] = 1;
  for_each_element(state, dst, [&](uint8_t* where, int64_t n) {
    if (!selected[n]) return;
    const uint8_t* from = src.valid() ? source.bytes.data() + n * size : scalar.data();
    std::memcpy(where, from, static_cast<size_t>(size));
    unwritten[n] = src.valid() ? source.unwritten[n] : 0;
  });
  state.mark_written(dst);
  for (size_t n = 0; n < unwritten.size(); ++n) {
    if (unwritten[n]) state.mark_element_unwritten(dst, static_cast<int64_t>(n));
  }
}

template <typename Access, bool kFastMatmul>
void execute(CoreState& state, const Instruction& ins) {
  const AccessPattern& dst = ins.dst;
  const AccessPattern& a = ins.src[0];
  const AccessPattern& b = ins.src[1];
  const AccessPattern& c = ins.src[2];
  switch (ins.opcode) {
    case Opcode::kMatmul: {
      auto stationary = Access::read(state, ins, a);
      auto moving = Access::read(state, ins, b);
      for (auto& v : stationary) v = tf32_input(a.dtype, v);
      for (auto& v : moving) v = tf32_input(b.dtype, v);
      const int64_t k = a.partitions(), m = a.free_size(), n = b.free_size();
      std::vector<float> out(static_cast<size_t>(m * n));
      if (kFastMatmul) {
        matmul_fp32(stationary.data(), m, moving.data(), n, k, m, n, out.data(), n, false);
      } else {
        matmul_reference(stationary, moving, k, m, n, out);
      }
      if (ins.accumulate) {
        const auto previous = Access::read(state, ins, dst);
        for (size_t i = 0; i < out.size(); ++i) out[i] = previous[i] + out[i];
      }
      Access::write(state, dst, out.data());
      return;
    }
    case Opcode::kTranspose: {
      const auto in = Access::read(state, ins, a);
      const int64_t p = a.partitions(), f = a.free_size();
      std::vector<float> out(in.size());
      for (int64_t i = 0; i < p; ++i) {
        for (int64_t j = 0; j < f; ++j) out[j * p + i] = in[i * f + j];
      }
      Access::write(state, dst, out.data());
      return;
    }
    case Opcode::kTensorTensor: {
      auto x = Access::read(state, ins, a);
      const auto y = Access::read(state, ins, b);
      for (size_t i = 0; i < x.size(); ++i) x[i] = apply_alu(ins.alu0, x[i], y[i]);
      Access::write(state, dst, x.data());
      return;
    }
    case Opcode::kTensorScalar: {
      auto x = Access::read(state, ins, a);
      const int64_t p = a.partitions(), f = a.free_size();
      const auto s0 = per_partition<Access>(state, ins, b, ins.imm0, p);
      const auto s1 = per_partition<Access>(state, ins, c, ins.imm1, p);
      const bool reduce = ins.dst2.valid();  // alu1 then reduces each row instead
      std::vector<float> reduced(static_cast<size_t>(p));
      for (int64_t i = 0; i < p; ++i) {
        for (int64_t j = 0; j < f; ++j) {
          float& v = x[i * f + j];
          v = ins.reverse0 ? apply_alu(ins.alu0, s0[i], v) : apply_alu(ins.alu0, v, s0[i]);
          if (ins.alu1 != AluOp::kBypass && !reduce) {
            v = ins.reverse1 ? apply_alu(ins.alu1, s1[i], v) : apply_alu(ins.alu1, v, s1[i]);
          }
        }
        if (reduce) reduced[i] = reduce_row(ins.alu1, x.data() + i * f, f);
      }
      Access::write(state, dst, x.data());
      if (reduce) Access::write(state, ins.dst2, reduced.data());
      return;
    }
    case Opcode::kTensorReduce: {
      const auto x = Access::read(state, ins, a);
      int64_t group = 1;
      for (int d = a.rank - ins.reduce_dims; d < a.rank; ++d) group *= a.dims[d].size;
      const int64_t groups = a.elements() / group;
      std::vector<float> out(static_cast<size_t>(groups));
      for (int64_t g = 0; g < groups; ++g) {
        const float acc = reduce_row(ins.alu0, x.data() + g * group, group);
        out[g] = ins.negate ? -acc : acc;
      }
      Access::write(state, dst, out.data());
      return;
    }
    case Opcode::kTensorCopy:
    case Opcode::kDmaCopy: {
      if (a.dtype == dst.dtype) {
        Access::copy_bits(state, ins, dst, a);
        return;
      }
      const auto x = Access::read(state, ins, a);
      Access::write(state, dst, x.data());
      return;
    }
    case Opcode::kMemset: {
      const std::vector<float> out(static_cast<size_t>(dst.elements()), ins.imm0);
      Access::write(state, dst, out.data());
      return;
    }
    case Opcode::kSelect: {
      const auto predicate = Access::read(state, ins, a);
      auto on_true = Access::read(state, ins, b);
      const auto on_false = Access::read(state, ins, c);
      for (size_t i = 0; i < on_true.size(); ++i) {
        if (predicate[i] == 0.0f) on_true[i] = on_false[i];
      }
      Access::write(state, dst, on_true.data());
      return;
    }
    case Opcode::kTensorTensorScan: {
      auto x = Access::read(state, ins, a);
      const auto y = Access::read(state, ins, b);
      const int64_t p = a.partitions();
      const auto initial = per_partition<Access>(state, ins, c, ins.imm0, p);
      const int64_t length = a.dims[a.rank - 1].size;
      const int64_t per_partition_rows = a.free_size() / length;
      for (int64_t i = 0; i < p; ++i) {
        for (int64_t r = 0; r < per_partition_rows; ++r) {
          float acc = initial[i];
          float* row = x.data() + (i * per_partition_rows + r) * length;
          const float* other = y.data() + (i * per_partition_rows + r) * length;
          for (int64_t j = 0; j < length; ++j) {
            acc = apply_alu(ins.alu1, apply_alu(ins.alu0, acc, row[j]), other[j]);
            row[j] = acc;
          }
        }
      }
      Access::write(state, dst, x.data());
      return;
    }
    case Opcode::kBnStats: {
      const auto x = Access::read(state, ins, a);
      const int64_t p = a.partitions(), f = a.free_size();
      std::vector<float> out(static_cast<size_t>(p * 6));
      for (int64_t i = 0; i < p; ++i) {
        for (int half = 0; half < 2; ++half) {
          float count = 0.0f, sum = 0.0f;
          for (int64_t j = half; j < f; j += 2) {
            sum += x[i * f + j];
            count += 1.0f;
          }
          const float mean = count > 0.0f ? sum / count : 0.0f;
          float squares = 0.0f;
          for (int64_t j = half; j < f; j += 2) {
            const float d = x[i * f + j] - mean;
            squares += d * d;
          }
          out[i * 6 + half * 3 + 0] = count;
          out[i * 6 + half * 3 + 1] = mean;
          out[i * 6 + half * 3 + 2] = count > 0.0f ? squares / count : 0.0f;
        }
      }
      Access::write(state, dst, out.data());
      return;
    }
    case Opcode::kBnAggr: {
      const auto x = Access::read(state, ins, a);
      const int64_t p = a.partitions(), f = a.free_size();
      std::vector<float> out(static_cast<size_t>(p * 2));
      for (int64_t i = 0; i < p; ++i) {
        // Chan's combination of (count, mean, M2) groups, in order.
        float count = 0.0f, mean = 0.0f, m2 = 0.0f;
        for (int64_t j = 0; j < f; j += 3) {
          const float n_b = x[i * f + j], mean_b = x[i * f + j + 1];
          const float m2_b = x[i * f + j + 2] * n_b;
          if (n_b == 0.0f) continue;
          const float total = count + n_b;
          const float delta = mean_b - mean;
          mean += delta * (n_b / total);
          m2 += m2_b + delta * delta * (count * n_b / total);
          count = total;
        }
        out[i * 2] = mean;
        out[i * 2 + 1] = count > 0.0f ? m2 / count : 0.0f;
      }
      Access::write(state, dst, out.data());
      return;
    }
    case Opcode::kActivation: {
      auto x = Access::read(state, ins, a);
      const int64_t p = a.partitions(), f = a.free_size();
      const auto bias = per_partition<Access>(state, ins, b, ins.imm1, p);
      const auto scale = per_partition<Access>(state, ins, c, ins.imm0, p);
      const bool reduce = ins.alu1 != AluOp::kBypass;
      std::vector<float> reduced(static_cast<size_t>(p));
      for (int64_t i = 0; i < p; ++i) {
        for (int64_t j = 0; j < f; ++j) {
          float& v = x[i * f + j];
          v = apply_activation(ins.function, std::fma(v, scale[i], bias[i]));
        }
        if (reduce) reduced[i] = reduce_row(ins.alu1, x.data() + i * f, f);
      }
      Access::write(state, dst, x.data());
      if (reduce) Access::write(state, ins.dst2, reduced.data());
      return;
    }
    case Opcode::kIota:
    case Opcode::kAffineSelect: {
      const int64_t p = dst.partitions();
      std::vector<float> on_true;
      if (ins.opcode == Opcode::kAffineSelect) on_true = Access::read(state, ins, a);
      std::vector<float> out(static_cast<size_t>(dst.elements()));
      int64_t index[kMaxDims] = {0, 0, 0, 0, 0};
      for (size_t n = 0; n < out.size(); ++n) {
        double value = ins.imm0 + static_cast<double>(ins.imm1) * static_cast<double>(index[0]);
        for (int d = 1; d < dst.rank; ++d)
          value += static_cast<double>(ins.pattern[d - 1]) * index[d];
        if (ins.opcode == Opcode::kIota) {
          out[n] = static_cast<float>(value);
        } else {
          out[n] =
              apply_alu(ins.alu0, static_cast<float>(value), 0.0f) != 0.0f ? on_true[n] : ins.imm2;
        }
        for (int d = dst.rank - 1; d >= 0; --d) {
          if (++index[d] < dst.dims[d].size) break;
          index[d] = 0;
        }
      }
      (void)p;
      Access::write(state, dst, out.data());
      return;
    }
    case Opcode::kPartitionReduce: {
      const auto x = Access::read(state, ins, a);
      const int64_t p = a.partitions(), f = a.free_size();
      std::vector<float> out(static_cast<size_t>(f));
      float identity;
      const bool has_identity = reduction_identity(ins.alu0, &identity);
      for (int64_t j = 0; j < f; ++j) {
        float acc = has_identity ? identity : x[j];
        for (int64_t i = has_identity ? 0 : 1; i < p; ++i)
          acc = reduce_step(ins.alu0, acc, x[i * f + j]);
        out[j] = acc;
      }
      Access::write(state, dst, out.data());
      return;
    }
    case Opcode::kMax8: {
      const auto x = Access::read(state, ins, a);
      const int64_t p = a.partitions(), f = a.free_size();
      std::vector<float> out(static_cast<size_t>(p * 8));
      std::vector<float> row(static_cast<size_t>(f));
      for (int64_t i = 0; i < p; ++i) {
        std::copy(x.begin() + i * f, x.begin() + (i + 1) * f, row.begin());
        std::partial_sort(row.begin(), row.begin() + 8, row.end(), ranks_above);
        std::copy(row.begin(), row.begin() + 8, out.begin() + i * 8);
      }
      Access::write(state, dst, out.data());
      return;
    }
    case Opcode::kFindIndex8: {
      const auto x = Access::read(state, ins, a);
      const auto values = Access::read(state, ins, b);
      const int64_t p = a.partitions(), f = a.free_size();
      // Infinity stores as the all-ones index of either dtype (integers saturate).
      std::vector<float> out(static_cast<size_t>(p * 8), std::numeric_limits<float>::infinity());
      for (int64_t i = 0; i < p; ++i) {
        for (int v = 0; v < 8; ++v) {
          const float wanted = values[i * 8 + v];
          for (int64_t j = 0; j < f; ++j) {
            if (x[i * f + j] == wanted) {
              out[i * 8 + v] = static_cast<float>(j);
              break;
            }
          }
        }
      }
      Access::write(state, dst, out.data());
      return;
    }
    case Opcode::kMatchReplace8: {
      auto x = Access::read(state, ins, a);
      const auto values = Access::read(state, ins, b);
      const int64_t p = a.partitions(), f = a.free_size();
      // Infinity stores as the all-ones index of the integer dtypes (they saturate).
      std::vector<float> found(static_cast<size_t>(p * 8), std::numeric_limits<float>::infinity());
      std::vector<char> replaced(static_cast<size_t>(f));
      for (int64_t i = 0; i < p; ++i) {
        std::fill(replaced.begin(), replaced.end(), 0);
        for (int v = 7; v >= 0; --v) {
          const float wanted = values[i * 8 + v];
          for (int64_t j = 0; j < f; ++j) {
            if (!replaced[j] && x[i * f + j] == wanted) {
              replaced[j] = 1;
              found[i * 8 + v] = static_cast<float>(j);
              break;
            }
          }
        }
        for (int64_t j = 0; j < f; ++j) {
          if (replaced[j]) x[i * f + j] = ins.imm0;
        }
      }
      Access::write(state, dst, x.data());
      if (ins.dst2.valid()) Access::write(state, ins.dst2, found.data());
      return;
    }
    case Opcode::kRangeSelect: {
      auto x = Access::read(state, ins, a);
      const int64_t p = a.partitions(), f = a.free_size();
      const auto bound0 = Access::read(state, ins, b);
      const auto bound1 = Access::read(state, ins, c);
      const auto reduce_op = static_cast<AluOp>(ins.pattern[0]);
      std::vector<float> reduced(static_cast<size_t>(p));
      for (int64_t i = 0; i < p; ++i) {
        for (int64_t j = 0; j < f; ++j) {
          const float position = static_cast<float>(j) + ins.imm0;
          const bool keep = apply_alu(ins.alu0, position, bound0[i]) != 0.0f &&
                            apply_alu(ins.alu1, position, bound1[i]) != 0.0f;
          if (!keep) x[i * f + j] = ins.imm1;
        }
        if (ins.dst2.valid()) reduced[i] = reduce_row(reduce_op, x.data() + i * f, f);
      }
      Access::write(state, dst, x.data());
      if (ins.dst2.valid()) Access::write(state, ins.dst2, reduced.data());
      return;
    }
    case Opcode::kCoreBarrier:
      return;
    case Opcode::kDmaCompute: {
      const float scales[3] = {ins.imm0, ins.imm1, ins.imm2};
      std::vector<float> sum(static_cast<size_t>(dst.elements()), 0.0f);
      for (int s = 0; s < 3; ++s) {
        if (!ins.src[s].valid()) continue;
        const auto x = Access::read(state, ins, ins.src[s]);
        for (size_t i = 0; i < sum.size(); ++i) sum[i] += x[i] * scales[s];
      }
      Access::write(state, dst, sum.data());
      return;
    }
    case Opcode::kStreamShuffle: {
      // Reads only the partitions some destination partition copies, all before any write; a
      // moved element never written stays never written where it lands.
      std::vector<std::vector<float>> rows(static_cast<size_t>(a.partitions()));
      std::vector<std::vector<int64_t>> unwritten(rows.size());
      for (int64_t d = 0; d < dst.partitions(); ++d) {
        const int from = stream_shuffle_source(ins, d);
        if (from < 0 || !rows[from].empty()) continue;
        AccessPattern row_in = a;
        row_in.start_partition += from;
        row_in.dims[0].size = 1;
        rows[from] = read_carrying<Access>(state, ins, row_in, &unwritten[from]);
      }
      for (int64_t d = 0; d < dst.partitions(); ++d) {
        const int from = stream_shuffle_source(ins, d);
        if (from < 0) continue;  // 255: the partition keeps its contents
        AccessPattern row = dst;
        row.start_partition += static_cast<int32_t>(d);
        row.dims[0].size = 1;
        Access::write(state, row, rows[from].data());
        for (const int64_t n : unwritten[from]) state.mark_element_unwritten(row, n);
      }
      return;
    }
    case Opcode::kNonzeroWithCount: {
      const int64_t f = a.free_size();
      std::vector<float> row_out(static_cast<size_t>(f + 1));
      for (int64_t p = 0; p < a.partitions(); p += kPartitionsPerGpSimdCore) {
        AccessPattern row_in = a;  // the only partition this core reads
        row_in.start_partition += static_cast<int32_t>(p);
        row_in.dims[0].size = 1;
        std::vector<int64_t> unwritten;
        const auto x = read_carrying<Access>(state, ins, row_in, &unwritten);
        int64_t count = 0;
        for (int64_t j = 0; j < f; ++j) {
          if (x[j] != 0.0f || std::isnan(x[j])) row_out[count++] = static_cast<float>(j) + ins.imm0;
        }
        std::fill(row_out.begin() + count, row_out.begin() + f, ins.imm1);
        row_out[f] = static_cast<float>(count);
        AccessPattern row = dst;
        row.start_partition += static_cast<int32_t>(p);
        row.dims[0].size = 1;
        Access::write(state, row, row_out.data());
        // Compacting a partition that held never-written elements gives nothing defined.
        if (!unwritten.empty()) {
          for (int64_t j = 0; j <= f; ++j) state.mark_element_unwritten(row, j);
        }
      }
      return;
    }
    case Opcode::kNGather:
      gather_in_partitions(state, ins);
      return;
    case Opcode::kTensorCopyPredicated:
      copy_predicated(state, ins);
      return;
    case Opcode::kQuantizeMx:
      execute_quantize_mx(state, ins);
      return;
    case Opcode::kMatmulMx:
      execute_matmul_mx(state, ins);
      return;
    case Opcode::kCount:
      return;
  }
}

}  // namespace

void execute_reference(CoreState& state, const Instruction& instruction) {
  execute<ElementAccess, false>(state, instruction);
}

bool execute_move_carrying_unwritten(CoreState& state, const Instruction& instruction,
                                     bool reference) {
  const Opcode opcode = instruction.opcode;
  const bool carrying_dma = opcode == Opcode::kDmaCopy && instruction.carries_unwritten &&
                            !instruction.indirect.active() &&
                            instruction.src[0].dtype == instruction.dst.dtype;
  if (opcode != Opcode::kTranspose && opcode != Opcode::kTensorCopy && !carrying_dma) return false;
  const AccessPattern& src = instruction.src[0];
  const AccessPattern& dst = instruction.dst;
  // In place, marks of source and destination would mix: the strict check applies.
  if (!src.valid() || src.buffer == dst.buffer) return false;
  const std::vector<int64_t> unwritten = state.unwritten_elements(src);
  if (unwritten.empty()) return false;
  state.mark_written(src);  // the footprint exactly: undone element by element below
  if (reference) {
    execute_reference(state, instruction);
  } else {
    execute_fast(state, instruction);
  }
  const int64_t p = src.partitions(), f = src.free_size();
  for (const int64_t n : unwritten) {
    state.mark_element_unwritten(src, n);
    state.mark_element_unwritten(dst, opcode == Opcode::kTranspose ? (n % f) * p + n / f : n);
  }
  return true;
}

void report_unwritten(CoreState& state, const Instruction& instruction, const AccessPattern& ap) {
  const int64_t total = ap.elements();
  for (int64_t i = 0; i < total; ++i) {
    if (!state.element_written(ap, i)) uninitialized(state, instruction, ap, i);
  }
  uninitialized(state, instruction, ap, 0);
}

void execute_rows(CoreState& state, const Instruction& instruction) {
  execute<RowAccess, true>(state, instruction);
}

}  // namespace openneuron::sim
