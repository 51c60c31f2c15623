#include "sim/rules.h"

#include <algorithm>
#include <string>

#include "sim/errors.h"
#include "sim/indirect.h"

namespace openneuron::sim {

namespace {

std::string shape_text(const AccessPattern& ap) {
  std::string text = "[";
  for (int d = 0; d < ap.rank; ++d) {
    if (d) text += ", ";
    text += std::to_string(ap.dims[d].size);
  }
  return text + "]";
}

class Checker {
 public:
  Checker(const Program& program, const CoreProfile& profile, const Layout& layout)
      : program_(program), profile_(profile), layout_(layout) {}

  void check(const Instruction& instruction) {
    current_ = &instruction;
    const char* name = opcode_name(instruction.opcode);
    // An operand with a run-time offset is checked at index 0 here, at its values when it runs.
    const IndirectOffset& indirect = instruction.indirect;
    const bool moves_dst = indirect.active() && indirect.on_dst;
    const bool moves_src = indirect.active() && !indirect.on_dst;
    check_operand(moves_dst ? at_index(instruction, 0) : instruction.dst, "dst");
    check_operand(instruction.dst2, "reduce_res");
    for (int s = 0; s < 4; ++s) {
      check_operand(s == 0 && moves_src ? at_index(instruction, 0) : instruction.src[s],
                    source_slot(s));
    }
    check_packed_mx_use(instruction);
    if (indirect.active()) check_indirect(instruction);
    check_engine_access(instruction);
    switch (instruction.opcode) {
      case Opcode::kMatmul:
        check_matmul(instruction);
        break;
      case Opcode::kTranspose:
        check_transpose(instruction);
        break;
      case Opcode::kTensorTensor:
        require_inputs(instruction, 2);
        same_shape(instruction.dst, instruction.src[0], "data1");
        same_shape(instruction.dst, instruction.src[1], "data2");
        if (memory(instruction.src[0]) == Memory::kPsum &&
            memory(instruction.src[1]) == Memory::kPsum) {
          fail(rule::kPsumBothInputs,
               std::string(name) +
                   " reads both inputs from PSUM; the Vector engine reads at most "
                   "one operand from PSUM: copy one to SBUF first");
        }
        check_bitwise(instruction.alu0, instruction);
        break;
      case Opcode::kTensorScalar:
        require_inputs(instruction, 1);
        same_shape(instruction.dst, instruction.src[0], "data");
        per_partition(instruction.src[1], instruction.src[0], "operand0");
        per_partition(instruction.src[2], instruction.src[0], "operand1");
        check_bitwise(instruction.alu0, instruction);
        check_bitwise(instruction.alu1, instruction);
        if (instruction.dst2.valid()) {  // tensor_scalar_reduce: alu1 reduces each row
          if (instruction.alu1 == AluOp::kBypass || instruction.src[2].valid())
            fail(rule::kBadOperand, "tensor_scalar_reduce takes one operator and a reduce_op");
          per_partition(instruction.dst2, instruction.src[0], "reduce_res");
        }
        break;
      case Opcode::kTensorReduce:
        check_reduce(instruction);
        break;
      case Opcode::kTensorCopy:
      case Opcode::kDmaCopy:
        require_inputs(instruction, 1);
        if (instruction.opcode == Opcode::kTensorCopy) {
          same_shape(instruction.dst, instruction.src[0], "src");
        } else if (instruction.dst.elements() != instruction.src[0].elements()) {
          fail(rule::kShapeMismatch,
               "dma_copy moves " + std::to_string(instruction.src[0].elements()) +
                   " elements into a destination of " + std::to_string(instruction.dst.elements()));
        }
        break;
      case Opcode::kMemset:
      case Opcode::kIota:
        break;
      case Opcode::kSelect:
        require_inputs(instruction, 3);
        same_shape(instruction.dst, instruction.src[0], "predicate");
        same_shape(instruction.dst, instruction.src[1], "on_true");
        same_shape(instruction.dst, instruction.src[2], "on_false");
        break;
      case Opcode::kTensorTensorScan:
        require_inputs(instruction, 2);
        same_shape(instruction.dst, instruction.src[0], "data0");
        same_shape(instruction.dst, instruction.src[1], "data1");
        per_partition(instruction.src[2], instruction.src[0], "initial");
        break;
      case Opcode::kBnStats:
        require_inputs(instruction, 1);
        if (instruction.src[0].free_size() > 512) {
          fail(rule::kShapeMismatch, "bn_stats reads at most 512 elements per partition, got " +
                                         std::to_string(instruction.src[0].free_size()));
        }
        if (instruction.dst.free_size() != 6 ||
            instruction.dst.partitions() != instruction.src[0].partitions()) {
          fail(rule::kShapeMismatch, "bn_stats writes [P, 6], got " + shape_text(instruction.dst));
        }
        break;
      case Opcode::kBnAggr:
        require_inputs(instruction, 1);
        if (instruction.src[0].free_size() % 6 != 0) {
          fail(rule::kShapeMismatch,
               "bn_aggr reads groups of 6 statistics, got " + shape_text(instruction.src[0]));
        }
        if (instruction.dst.free_size() != 2 ||
            instruction.dst.partitions() != instruction.src[0].partitions()) {
          fail(rule::kShapeMismatch, "bn_aggr writes [P, 2], got " + shape_text(instruction.dst));
        }
        break;
      case Opcode::kActivation:
        require_inputs(instruction, 1);
        same_shape(instruction.dst, instruction.src[0], "data");
        per_partition(instruction.src[1], instruction.src[0], "bias");
        per_partition(instruction.src[2], instruction.src[0], "scale");
        if (instruction.alu1 != AluOp::kBypass) {
          if (!instruction.dst2.valid())
            fail(rule::kBadOperand, "activation reduce needs reduce_res");
          per_partition(instruction.dst2, instruction.src[0], "reduce_res");
        }
        break;
      case Opcode::kAffineSelect:
        require_inputs(instruction, 1);
        same_shape(instruction.dst, instruction.src[0], "on_true_tile");
        break;
      case Opcode::kPartitionReduce:
        require_inputs(instruction, 1);
        if (instruction.dst.partitions() != 1 ||
            instruction.dst.free_size() != instruction.src[0].free_size()) {
          fail(rule::kShapeMismatch, "tensor_partition_reduce writes [1, F] for data [P, F], got " +
                                         shape_text(instruction.dst) + " for " +
                                         shape_text(instruction.src[0]));
        }
        break;
      case Opcode::kMax8:
      case Opcode::kFindIndex8:
        check_top8(instruction);
        break;
      case Opcode::kStreamShuffle:
        check_stream_shuffle(instruction);
        break;
      case Opcode::kNonzeroWithCount:
        check_nonzero_with_count(instruction);
        break;
      case Opcode::kMatchReplace8:
        check_match_replace8(instruction);
        break;
      case Opcode::kRangeSelect:
        check_range_select(instruction);
        break;
      case Opcode::kCoreBarrier:
        break;
      case Opcode::kDmaCompute:
        check_dma_compute(instruction);
        break;
      case Opcode::kNGather:
        check_n_gather(instruction);
        break;
      case Opcode::kTensorCopyPredicated:
        check_copy_predicated(instruction);
        break;
      case Opcode::kQuantizeMx:
        check_quantize_mx(instruction);
        break;
      case Opcode::kMatmulMx:
        check_matmul_mx(instruction);
        break;
      case Opcode::kCount:
        fail(rule::kBadOperand, "unknown opcode");
    }
  }

 private:
  static const char* source_slot(int s) {
    static const char* const kNames[] = {"src0", "src1", "src2", "src3"};
    return kNames[s];
  }

  void check_stream_shuffle(const Instruction& instruction) {
    require_inputs(instruction, 1);
    const AccessPattern& src = instruction.src[0];
    const AccessPattern& dst = instruction.dst;
    if (src.dtype != dst.dtype) {
      fail(rule::kDtype, std::string("keeps the dtype: ") + dtype_name(src.dtype) + " in, " +
                             dtype_name(dst.dtype) + " out");
    }
    if (src.free_size() != dst.free_size()) {
      fail(rule::kShapeMismatch, "src " + shape_text(src) + " and dst " + shape_text(dst) +
                                     " must have the same elements per partition");
    }
    for (int64_t d = 0; d < dst.partitions(); ++d) {
      const int from = stream_shuffle_source(instruction, d);
      if (from >= src.partitions() || (from >= 0 && from - d / 32 * 32 >= 32)) {
        fail(rule::kOutOfBounds, "dst partition " + std::to_string(d) + " copies partition " +
                                     std::to_string(from) + " of src " + shape_text(src) +
                                     ", which it does not have");
      }
    }
  }

  // nonzero_with_count: GpSimd, dst [P, F + 1] for src [P, F], indices held exactly.
  void check_nonzero_with_count(const Instruction& instruction) {
    require_inputs(instruction, 1);
    if (instruction.engine != Engine::kGpSimd) {
      fail(rule::kBadOperand, "runs on the GpSimd engine");
    }
    const AccessPattern& src = instruction.src[0];
    const AccessPattern& dst = instruction.dst;
    if (dst.partitions() != src.partitions() || dst.free_size() != src.free_size() + 1) {
      fail(rule::kShapeMismatch, "writes [" + std::to_string(src.partitions()) + ", " +
                                     std::to_string(src.free_size() + 1) +
                                     "] (indices and count) for src " + shape_text(src) + ", got " +
                                     shape_text(dst));
    }
    const DType out = dst.dtype;
    if (out != DType::kInt32 && out != DType::kUInt32 && out != DType::kFloat32) {
      fail(rule::kDtype,
           std::string("writes int32, uint32 or float32 indices, got ") + dtype_name(out));
    }
  }

  // nc_match_replace8: dst shaped as data, 8 values per partition, optional [P, 8] indices.
  void check_match_replace8(const Instruction& instruction) {
    require_inputs(instruction, 2);
    const AccessPattern& data = instruction.src[0];
    same_shape(instruction.dst, data, "data");
    if (data.free_size() < 8 || data.free_size() > 16384) {
      fail(rule::kShapeMismatch, "reads 8 to 16384 elements per partition, got " +
                                     std::to_string(data.free_size()) + " in " + shape_text(data));
    }
    const AccessPattern& vals = instruction.src[1];
    if (vals.free_size() != 8 || vals.partitions() != data.partitions()) {
      fail(rule::kShapeMismatch, "vals holds 8 values per partition of data " + shape_text(data) +
                                     ", got " + shape_text(vals));
    }
    const AccessPattern& indices = instruction.dst2;
    if (!indices.valid()) return;
    if (indices.free_size() != 8 || indices.partitions() != data.partitions()) {
      fail(rule::kShapeMismatch, "dst_idx holds 8 indices per partition of data " +
                                     shape_text(data) + ", got " + shape_text(indices));
    }
    const DType out = indices.dtype;
    if (out != DType::kUInt32 && out != DType::kUInt16 && out != DType::kInt32 &&
        out != DType::kFloat32) {
      fail(rule::kDtype,
           std::string("writes uint16, uint32, int32 or float32 indices, got ") + dtype_name(out));
    }
  }

  // nc_n_gather: data, indices and dst span the same partitions, all in SBUF (GpSimd);
  // dst holds as many elements per partition as indices, in data's dtype; indices are uint32.
  void check_n_gather(const Instruction& instruction) {
    require_inputs(instruction, 2);
    const AccessPattern& data = instruction.src[0];
    const AccessPattern& indices = instruction.src[1];
    const AccessPattern& dst = instruction.dst;
    if (instruction.engine != Engine::kGpSimd) fail(rule::kBadOperand, "runs on the GpSimd engine");
    if (data.partitions() != dst.partitions() || indices.partitions() != dst.partitions() ||
        indices.free_size() != dst.free_size()) {
      fail(rule::kShapeMismatch, "data " + shape_text(data) + ", indices " + shape_text(indices) +
                                     " and dst " + shape_text(dst) +
                                     " must span the same partitions, dst with as many elements "
                                     "per partition as indices");
    }
    if (indices.dtype != DType::kUInt32) {
      fail(rule::kDtype, std::string("indices are uint32, got ") + dtype_name(indices.dtype));
    }
    if (dst.dtype != data.dtype) {
      fail(rule::kDtype, std::string("dst has data's dtype ") + dtype_name(data.dtype) + ", got " +
                             dtype_name(dst.dtype));
    }
  }

  // tensor_copy_predicated: src (when a tensor) and predicate shaped as dst, not both in PSUM;
  // src of dst's dtype; predicate uint8 / uint16 / uint32.
  void check_copy_predicated(const Instruction& instruction) {
    if (!instruction.dst.valid() || !instruction.src[1].valid()) {
      fail(rule::kBadOperand, "missing destination or predicate");
    }
    const AccessPattern& src = instruction.src[0];
    const AccessPattern& predicate = instruction.src[1];
    same_shape(instruction.dst, src, "src");
    same_shape(instruction.dst, predicate, "predicate");
    if (src.valid() && memory(src) == Memory::kPsum && memory(predicate) == Memory::kPsum) {
      fail(rule::kPsumBothInputs, "src and predicate are both in PSUM; at most one may be");
    }
    if (src.valid() && src.dtype != instruction.dst.dtype) {
      fail(rule::kDtype, std::string("src and dst share a dtype, got ") + dtype_name(src.dtype) +
                             " and " + dtype_name(instruction.dst.dtype));
    }
    const DType kind = predicate.dtype;
    if (kind != DType::kUInt8 && kind != DType::kUInt16 && kind != DType::kUInt32) {
      fail(rule::kDtype,
           std::string("the predicate is uint8, uint16 or uint32, got ") + dtype_name(kind));
    }
  }

  // dma_compute: every source holds as many elements as dst.
  void check_dma_compute(const Instruction& instruction) {
    require_inputs(instruction, 1);
    for (const AccessPattern& src : instruction.src) {
      if (src.valid() && src.elements() != instruction.dst.elements()) {
        fail(rule::kShapeMismatch, "source " + shape_text(src) + " and dst " +
                                       shape_text(instruction.dst) +
                                       " hold different numbers "
                                       "of elements");
      }
    }
  }

  // range_select: dst shaped as on_true_tile, bounds one value per partition.
  void check_range_select(const Instruction& instruction) {
    require_inputs(instruction, 3);
    same_shape(instruction.dst, instruction.src[0], "on_true_tile");
    for (int s = 1; s < 3; ++s) {
      const AccessPattern& bound = instruction.src[s];
      if (bound.partitions() != instruction.src[0].partitions() || bound.free_size() != 1) {
        fail(rule::kShapeMismatch, std::string(s == 1 ? "bound0" : "bound1") +
                                       " holds one value per partition, got " + shape_text(bound));
      }
    }
    const AccessPattern& reduced = instruction.dst2;
    if (reduced.valid() &&
        (reduced.partitions() != instruction.src[0].partitions() || reduced.free_size() != 1)) {
      fail(rule::kShapeMismatch,
           "reduce_res holds one value per partition, got " + shape_text(reduced));
    }
  }

  // max8 / nc_find_index8: [P, 8] out of 8..16384 elements per partition.
  void check_top8(const Instruction& instruction) {
    const bool find = instruction.opcode == Opcode::kFindIndex8;
    require_inputs(instruction, find ? 2 : 1);
    const AccessPattern& data = instruction.src[0];
    if (data.free_size() < 8 || data.free_size() > 16384) {
      fail(rule::kShapeMismatch, "reads 8 to 16384 elements per partition, got " +
                                     std::to_string(data.free_size()) + " in " + shape_text(data));
    }
    if (instruction.dst.free_size() != 8 || instruction.dst.partitions() != data.partitions()) {
      fail(rule::kShapeMismatch, "writes [" + std::to_string(data.partitions()) + ", 8] for data " +
                                     shape_text(data) + ", got " + shape_text(instruction.dst));
    }
    if (!find) return;
    const AccessPattern& vals = instruction.src[1];
    if (vals.free_size() != 8 || vals.partitions() != data.partitions()) {
      fail(rule::kShapeMismatch, "vals holds 8 values per partition of data " + shape_text(data) +
                                     ", got " + shape_text(vals));
    }
    const DType out = instruction.dst.dtype;
    if (out != DType::kUInt32 && out != DType::kUInt16) {
      fail(rule::kDtype, std::string("writes uint16 or uint32 indices, got ") + dtype_name(out));
    }
  }

  [[noreturn]] void fail(const char* rule_name, const std::string& message) const {
    throw SimError(rule_name, std::string(opcode_name(current_->opcode)) + ": " + message,
                   program_.source, current_->line);
  }

  Memory memory(const AccessPattern& ap) const {
    return ap.valid() ? program_.buffers[ap.buffer].memory : Memory::kHbm;
  }

  void check_operand(const AccessPattern& ap, const char* slot) {
    if (!ap.valid()) return;
    if (static_cast<size_t>(ap.buffer) >= program_.buffers.size()) {
      fail(rule::kBadOperand, std::string(slot) + " names buffer " + std::to_string(ap.buffer) +
                                  ", which does not exist");
    }
    if (ap.rank < 1 || ap.rank > kMaxDims) {
      fail(rule::kBadOperand, std::string(slot) + " has rank " + std::to_string(ap.rank));
    }
    const Buffer& buffer = program_.buffers[ap.buffer];
    for (int d = 0; d < ap.rank; ++d) {
      if (ap.dims[d].size < 1) {
        fail(rule::kBadOperand,
             std::string(slot) + " '" + buffer.name + "' has an empty dimension " + shape_text(ap));
      }
    }
    const int64_t element_size = dtype_size(ap.dtype);
    const auto [low, high] = ap.offset_span(buffer.memory == Memory::kHbm ? 0 : 1);
    if (buffer.memory == Memory::kHbm) {
      if (low < 0 || (high + 1) * element_size > buffer.bytes_per_partition) {
        fail(rule::kOutOfBounds, std::string(slot) + " reaches outside HBM tensor '" + buffer.name +
                                     "' (" + std::to_string(buffer.bytes_per_partition) + " B)");
      }
      return;
    }
    const int64_t partitions = ap.dims[0].size;
    if (ap.dims[0].stride != 1 && partitions > 1) {
      fail(rule::kPartitionStride,
           std::string(slot) + " '" + buffer.name + "' steps over partitions with stride " +
               std::to_string(ap.dims[0].stride) + "; the partition dimension cannot be strided");
    }
    if (partitions > profile_.partitions) {
      fail(rule::kPartitionLimit, std::string(slot) + " '" + buffer.name + "' spans " +
                                      std::to_string(partitions) + " partitions; at most " +
                                      std::to_string(profile_.partitions));
    }
    const int64_t start = ap.start_partition;
    if (start < 0 || start + partitions > buffer.partitions) {
      fail(rule::kOutOfBounds, std::string(slot) + " partitions [" + std::to_string(start) + ", " +
                                   std::to_string(start + partitions) + ") outside '" +
                                   buffer.name + "' with " + std::to_string(buffer.partitions) +
                                   " partitions");
    }
    const bool aligned = partitions > 64   ? start == 0
                         : partitions > 32 ? start % 64 == 0
                                           : start % 32 == 0;
    // Compute engines reach partitions in 32-partition quadrants; DMA writes any partition.
    if (!aligned && current_->engine != Engine::kDma) {
      fail(rule::kPartitionAlignment,
           std::string(slot) + " '" + buffer.name + "' starts at partition " +
               std::to_string(start) + " with " + std::to_string(partitions) +
               " partitions; an access of >64 partitions starts at 0, of 33-64 at 0 or 64, of "
               "<=32 at a multiple of 32");
    }
    if (low < 0 || (high + 1) * element_size > buffer.bytes_per_partition) {
      fail(rule::kOutOfBounds, std::string(slot) + " reaches outside '" + buffer.name + "' (" +
                                   std::to_string(buffer.bytes_per_partition) +
                                   " B per partition)");
    }
  }

  void check_engine_access(const Instruction& instruction) {
    const Engine engine = instruction.engine;
    auto each = [&](const AccessPattern& ap, bool is_write) {
      if (!ap.valid()) return;
      const Memory where = memory(ap);
      if (engine == Engine::kDma) {
        if (where == Memory::kPsum) {
          fail(rule::kPsumAccess, "DMA cannot access PSUM ('" + program_.buffers[ap.buffer].name +
                                      "'); copy the tile to SBUF with an engine first");
        }
        return;
      }
      if (where == Memory::kHbm) {
        fail(rule::kHbmAccess, std::string(engine_name(engine)) + " engine cannot access HBM ('" +
                                   program_.buffers[ap.buffer].name +
                                   "'); load the data to SBUF with a DMA first");
      }
      if (engine == Engine::kGpSimd && where == Memory::kPsum) {
        fail(rule::kPsumAccess,
             "the GpSimd engine cannot access PSUM ('" + program_.buffers[ap.buffer].name + "')");
      }
      if (engine == Engine::kTensor &&
          ((is_write && where != Memory::kPsum) || (!is_write && where != Memory::kSbuf))) {
        fail(rule::kMatmulPlacement,
             std::string("the Tensor engine reads SBUF and writes PSUM; '") +
                 program_.buffers[ap.buffer].name + "' is in " + memory_name(where));
      }
    };
    each(instruction.dst, true);
    each(instruction.dst2, true);
    for (const auto& src : instruction.src) each(src, false);
  }

  void check_indirect(const Instruction& instruction) {
    const IndirectOffset& indirect = instruction.indirect;
    if (instruction.opcode != Opcode::kDmaCopy) {
      fail(rule::kBadOperand,
           "run-time offsets (scalar_offset / vector_offset) apply to "
           "dma_copy only");
    }
    const char* slot = indirect.on_dst ? "dst" : "src";
    const AccessPattern& moved = indirect.on_dst ? instruction.dst : instruction.src[0];
    const AccessPattern& other = indirect.on_dst ? instruction.src[0] : instruction.dst;
    if (!moved.valid() || memory(moved) != Memory::kHbm) {
      fail(rule::kBadOperand, std::string("a run-time offset moves an HBM access pattern; ") +
                                  slot + " is not in HBM");
    }
    const AccessPattern& index = indirect.index;
    if (!index.valid()) fail(rule::kBadOperand, "a run-time offset without its index tile");
    check_operand(index, "offset index");
    if (memory(index) != Memory::kSbuf) {
      fail(rule::kBadOperand, "run-time offsets are read from SBUF; '" +
                                  program_.buffers[index.buffer].name + "' is in " +
                                  memory_name(memory(index)));
    }
    if (is_float(index.dtype)) {
      fail(rule::kDtype, std::string("run-time offsets are integers, '") +
                             program_.buffers[index.buffer].name + "' holds " +
                             dtype_name(index.dtype));
    }
    if (indirect.bound < 1 || indirect.stride < 0) {
      fail(rule::kBadOperand, "run-time offset with bound " + std::to_string(indirect.bound) +
                                  " and stride " + std::to_string(indirect.stride));
    }
    if (indirect.kind == IndirectKind::kScalar && index.elements() != 1) {
      fail(rule::kShapeMismatch,
           "a scalar_offset is one value, got an index of " + shape_text(index));
    }
    if (indirect.kind == IndirectKind::kVector) {
      const int64_t rows = moved.dims[0].size;
      if (index.partitions() != rows || index.free_size() != 1) {
        fail(rule::kShapeMismatch, "a vector_offset is one value per row [" + std::to_string(rows) +
                                       ", 1] of " + slot + ", got " + shape_text(index));
      }
      if (other.dims[0].size != rows) {
        fail(rule::kShapeMismatch, std::string("with a vector_offset on ") + slot +
                                       ", the other operand's first dimension must have its " +
                                       std::to_string(rows) + " rows, got " + shape_text(other));
      }
    }
    // Offsets other than 0 are checked as they are read (resolve_indirect): a kernel may move
    // an access by less than its bound allows, and only the values it reads must stay inside.
  }

  void require_inputs(const Instruction& instruction, int count) {
    if (!instruction.dst.valid()) fail(rule::kBadOperand, "missing destination");
    for (int s = 0; s < count; ++s) {
      if (!instruction.src[s].valid()) {
        fail(rule::kBadOperand, std::string("missing operand ") + source_slot(s));
      }
    }
  }

  void same_shape(const AccessPattern& dst, const AccessPattern& src, const char* what) {
    if (!src.valid()) return;
    if (dst.partitions() != src.partitions() || dst.free_size() != src.free_size()) {
      fail(rule::kShapeMismatch, std::string(what) + " " + shape_text(src) +
                                     " does not match the destination " + shape_text(dst));
    }
  }

  void per_partition(const AccessPattern& operand, const AccessPattern& data, const char* what) {
    if (!operand.valid()) return;
    if (operand.free_size() != 1 || operand.partitions() != data.partitions()) {
      fail(rule::kShapeMismatch, std::string(what) + " must be one value per partition [" +
                                     std::to_string(data.partitions()) + ", 1], got " +
                                     shape_text(operand));
    }
  }

  void check_bitwise(AluOp op, const Instruction& instruction) {
    if (op != AluOp::kBitwiseAnd && op != AluOp::kBitwiseOr && op != AluOp::kBitwiseXor) return;
    for (const auto& ap : {instruction.dst, instruction.src[0], instruction.src[1]}) {
      if (ap.valid() && is_float(ap.dtype)) {
        fail(rule::kDtype,
             std::string(alu_op_name(op)) + " needs integer operands, got " + dtype_name(ap.dtype));
      }
    }
  }

  void check_matmul(const Instruction& instruction) {
    require_inputs(instruction, 2);
    const AccessPattern& stationary = instruction.src[0];
    const AccessPattern& moving = instruction.src[1];
    const int64_t k = stationary.partitions();
    const int64_t m = stationary.free_size();
    const int64_t n = moving.free_size();
    if (moving.partitions() != k) {
      fail(rule::kMatmulLimits, "stationary " + shape_text(stationary) + " and moving " +
                                    shape_text(moving) +
                                    " must have the same partition (contraction) size");
    }
    if (k > profile_.matmul_max_k || m > profile_.matmul_max_m || n > profile_.matmul_max_n) {
      fail(rule::kMatmulLimits, "K=" + std::to_string(k) + ", M=" + std::to_string(m) +
                                    ", N=" + std::to_string(n) +
                                    " exceeds K<=" + std::to_string(profile_.matmul_max_k) +
                                    ", M<=" + std::to_string(profile_.matmul_max_m) +
                                    ", N<=" + std::to_string(profile_.matmul_max_n));
    }
    if (instruction.dst.partitions() != m || instruction.dst.free_size() != n) {
      fail(rule::kShapeMismatch, "result " + shape_text(instruction.dst) + " must be [M=" +
                                     std::to_string(m) + ", N=" + std::to_string(n) + "]");
    }
    for (const auto* ap : {&stationary, &moving}) {
      if (!is_float(ap->dtype)) {
        fail(rule::kDtype,
             std::string("matmul operands are floating point, got ") + dtype_name(ap->dtype));
      }
    }
    const bool fp32_stationary = stationary.dtype == DType::kFloat32;
    if (fp32_stationary != (moving.dtype == DType::kFloat32)) {
      fail(rule::kDtype, std::string("float32 matmul needs both operands in float32, got ") +
                             dtype_name(stationary.dtype) + " and " + dtype_name(moving.dtype));
    }
    if (instruction.dst.dtype != DType::kFloat32) {
      fail(rule::kDtype, std::string("matmul accumulates into a float32 PSUM tile, got ") +
                             dtype_name(instruction.dst.dtype));
    }
    check_single_bank(instruction.dst);
  }

  // Packed MX data is opaque: moved bit for bit (same type both sides) or read by kMatmulMx.
  void check_packed_mx_use(const Instruction& instruction) {
    const bool moves_bits =
        (instruction.opcode == Opcode::kDmaCopy || instruction.opcode == Opcode::kTensorCopy) &&
        instruction.src[0].dtype == instruction.dst.dtype;
    for (int s = 0; s < 4; ++s) {
      const AccessPattern& src = instruction.src[s];
      if (!src.valid() || !is_packed_mx(src.dtype) || moves_bits) continue;
      if (instruction.opcode == Opcode::kMatmulMx && s < 2) continue;
      fail(rule::kDtype, std::string(dtype_name(src.dtype)) +
                             " holds packed MX values: only nc_matmul_mx reads them, and copies "
                             "move them to the same type");
    }
    const AccessPattern& dst = instruction.dst;
    if (dst.valid() && is_packed_mx(dst.dtype) && !moves_bits &&
        instruction.opcode != Opcode::kQuantizeMx) {
      fail(rule::kDtype, std::string(dtype_name(dst.dtype)) +
                             " holds packed MX values: only quantize_mx and same-type copies "
                             "write them");
    }
  }

  // MX instructions exist on NeuronCore-v4 (trn3) and newer.
  void require_mx_profile() {
    if (profile_.name == "trn2") {
      fail(rule::kBadOperand, std::string(opcode_name(current_->opcode)) +
                                  " needs NeuronCore-v4 (trn3); this launch targets trn2");
    }
  }

  // Scales of a data operand [P, F]: uint8 in SBUF, one column per packed column, and a
  // partition for each group row as mx_scale_partition places them.
  void check_mx_scales(const AccessPattern& scales, const AccessPattern& data, const char* name) {
    const int64_t groups = data.partitions() / 8;
    const int64_t needed = groups ? (groups - 1) / 4 * 32 + (groups - 1) % 4 + 1 : 0;
    if (scales.dtype != DType::kUInt8 || scales.rank != 2 || scales.partitions() < needed ||
        scales.free_size() < data.free_size()) {
      fail(rule::kShapeMismatch, std::string(name) + " of " + shape_text(data) +
                                     " is a uint8 tile of at least [" + std::to_string(needed) +
                                     ", " + std::to_string(data.free_size()) + "], got " +
                                     dtype_name(scales.dtype) + " " + shape_text(scales));
    }
  }

  void check_quantize_mx(const Instruction& instruction) {
    require_mx_profile();
    require_inputs(instruction, 1);
    const AccessPattern& src = instruction.src[0];
    const AccessPattern& dst = instruction.dst;
    if (src.dtype != DType::kBFloat16 && src.dtype != DType::kFloat16) {
      fail(rule::kDtype,
           std::string("quantize_mx reads bfloat16 or float16, got ") + dtype_name(src.dtype));
    }
    if (dst.dtype != DType::kFloat8E4M3x4 && dst.dtype != DType::kFloat8E5M2x4) {
      fail(rule::kDtype, std::string("quantize_mx writes float8_e4m3fn_x4 or float8_e5m2_x4, "
                                     "got ") +
                             dtype_name(dst.dtype));
    }
    if (src.partitions() % 8 || src.free_size() % 4 || dst.partitions() != src.partitions() ||
        dst.free_size() * 4 != src.free_size()) {
      fail(rule::kShapeMismatch, "quantize_mx of " + shape_text(src) +
                                     " (partitions a multiple of 8, free size of 4) writes [P, "
                                     "F/4], got " +
                                     shape_text(dst));
    }
    if (!instruction.dst2.valid()) fail(rule::kBadOperand, "quantize_mx needs dst_scale");
    check_mx_scales(instruction.dst2, dst, "dst_scale");
  }

  void check_matmul_mx(const Instruction& instruction) {
    require_mx_profile();
    require_inputs(instruction, 4);
    const AccessPattern& stationary = instruction.src[0];
    const AccessPattern& moving = instruction.src[1];
    for (const auto* ap : {&stationary, &moving}) {
      if (!is_packed_mx(ap->dtype)) {
        fail(rule::kDtype,
             std::string("nc_matmul_mx operands are MX _x4 types, got ") + dtype_name(ap->dtype));
      }
    }
    const int64_t k = stationary.partitions(), m = stationary.free_size();
    const int64_t n = moving.free_size();
    if (moving.partitions() != k || k % 32 || k > profile_.matmul_max_k ||
        m > profile_.matmul_max_m || n > profile_.matmul_max_n) {
      fail(rule::kMatmulLimits, "nc_matmul_mx of stationary " + shape_text(stationary) +
                                    " and moving " + shape_text(moving) +
                                    ": the same K (a multiple of 32, at most " +
                                    std::to_string(profile_.matmul_max_k) +
                                    "), M <= " + std::to_string(profile_.matmul_max_m) +
                                    ", N <= " + std::to_string(profile_.matmul_max_n));
    }
    if (instruction.dst.partitions() != m || instruction.dst.free_size() != n) {
      fail(rule::kShapeMismatch, "result " + shape_text(instruction.dst) + " must be [M=" +
                                     std::to_string(m) + ", N=" + std::to_string(n) + "]");
    }
    if (instruction.dst.dtype != DType::kFloat32 && instruction.dst.dtype != DType::kBFloat16) {
      fail(rule::kDtype, std::string("nc_matmul_mx writes float32 or bfloat16 PSUM, got ") +
                             dtype_name(instruction.dst.dtype));
    }
    check_mx_scales(instruction.src[2], stationary, "stationary_scale");
    check_mx_scales(instruction.src[3], moving, "moving_scale");
    check_single_bank(instruction.dst);
  }

  void check_transpose(const Instruction& instruction) {
    require_inputs(instruction, 1);
    const AccessPattern& src = instruction.src[0];
    if (src.partitions() > 128 || src.free_size() > 128) {
      fail(rule::kMatmulLimits, "transposes at most [128, 128], got " + shape_text(src));
    }
    if (instruction.engine == Engine::kVector && (src.partitions() > 32 || src.free_size() > 32)) {
      fail(rule::kMatmulLimits, "the Vector engine transposes at most [32, 32], got " +
                                    shape_text(src) + "; use the Tensor engine (dst in PSUM)");
    }
    if (instruction.engine != Engine::kTensor && instruction.engine != Engine::kVector) {
      fail(rule::kBadOperand, "nc_transpose runs on the Tensor or the Vector engine");
    }
    if (instruction.dst.partitions() != src.free_size() ||
        instruction.dst.free_size() != src.partitions()) {
      fail(rule::kShapeMismatch, "result " + shape_text(instruction.dst) +
                                     " must be the transpose of " + shape_text(src));
    }
    if (instruction.dst.dtype != src.dtype) {
      fail(rule::kDtype, std::string("transpose keeps the dtype: ") + dtype_name(src.dtype) +
                             " in, " + dtype_name(instruction.dst.dtype) + " out");
    }
    if (instruction.engine == Engine::kTensor) check_single_bank(instruction.dst);
  }

  void check_single_bank(const AccessPattern& dst) {
    const int64_t element_size = dtype_size(dst.dtype);
    const auto [low, high] = dst.offset_span(1);
    const int64_t base = layout_.base[dst.buffer];
    const int64_t first = base + low * element_size;
    const int64_t last = base + (high + 1) * element_size - 1;
    if (first / profile_.psum_bank_bytes != last / profile_.psum_bank_bytes) {
      fail(rule::kPsumBank, "the result '" + program_.buffers[dst.buffer].name +
                                "' crosses a PSUM bank boundary (banks are " +
                                std::to_string(profile_.psum_bank_bytes) +
                                " B per partition: 512 fp32)");
    }
  }

  void check_reduce(const Instruction& instruction) {
    require_inputs(instruction, 1);
    const AccessPattern& src = instruction.src[0];
    const int free_dims = src.rank - 1;
    if (instruction.reduce_dims < 1 || instruction.reduce_dims > free_dims) {
      fail(rule::kBadOperand, "reduces the last " + std::to_string(instruction.reduce_dims) +
                                  " free dimensions of " + shape_text(src) +
                                  "; the partition dimension cannot be reduced here "
                                  "(use tensor_partition_reduce)");
    }
    int64_t kept = 1;
    for (int d = 1; d < src.rank - instruction.reduce_dims; ++d) kept *= src.dims[d].size;
    if (instruction.dst.partitions() != src.partitions() || instruction.dst.free_size() != kept) {
      fail(rule::kShapeMismatch, "result " + shape_text(instruction.dst) + " does not match " +
                                     shape_text(src) + " reduced over its last " +
                                     std::to_string(instruction.reduce_dims) + " dimension(s)");
    }
  }

  const Program& program_;
  const CoreProfile& profile_;
  const Layout& layout_;
  const Instruction* current_ = nullptr;
};

}  // namespace

void check_rules(const Program& program, const CoreProfile& profile, const Layout& layout) {
  Checker checker(program, profile, layout);
  for (const auto& instruction : program.instructions) checker.check(instruction);
}

}  // namespace openneuron::sim
