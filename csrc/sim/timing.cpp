#include "sim/timing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <map>

#include "sim/indirect.h"

namespace openneuron::sim {

namespace {

// Byte extent [low, high) of an access pattern inside each partition (on-chip, without the
// buffer's base) or inside its HBM tensor.
void extent(const Program& program, const AccessPattern& ap, int64_t* low, int64_t* high) {
  const bool on_chip = program.buffers[ap.buffer].memory != Memory::kHbm;
  int64_t first = ap.offset, last = ap.offset;
  for (int d = on_chip ? 1 : 0; d < ap.rank; ++d) {
    const int64_t span = (ap.dims[d].size - 1) * ap.dims[d].stride;
    (span < 0 ? first : last) += span;
  }
  const int64_t size = dtype_size(ap.dtype);
  *low = first * size;
  *high = (last + 1) * size;
}

// Bytes of the longest contiguous run at the innermost level of an access pattern; on-chip
// runs never cross a partition.
int64_t contiguous_bytes(const Program& program, const AccessPattern& ap) {
  const bool on_chip = program.buffers[ap.buffer].memory != Memory::kHbm;
  const int64_t size = dtype_size(ap.dtype);
  int64_t run = 1;
  int64_t expected_stride = 1;
  for (int d = ap.rank - 1; d >= (on_chip ? 1 : 0); --d) {
    if (ap.dims[d].size == 1) continue;
    if (ap.dims[d].stride != expected_stride) break;
    run *= ap.dims[d].size;
    expected_stride = run;
  }
  return run * size;
}

// As contiguous_bytes, with the dimensions taken in the order of their strides rather than
// the order the pattern walks them: the run a transposing DMA engine reads or writes, since it
// reorders the elements itself.
int64_t contiguous_bytes_in_memory_order(const Program& program, const AccessPattern& ap) {
  AccessPattern sorted = ap;
  const int first = program.buffers[ap.buffer].memory != Memory::kHbm ? 1 : 0;
  std::sort(sorted.dims + first, sorted.dims + ap.rank,
            [](const auto& a, const auto& b) { return std::abs(a.stride) > std::abs(b.stride); });
  return contiguous_bytes(program, sorted);
}

int64_t free_elements(const AccessPattern& ap) { return ap.free_size(); }

bool on_psum(const Program& program, const AccessPattern& ap) {
  return ap.valid() && program.buffers[ap.buffer].memory == Memory::kPsum;
}

struct HbmAccess {
  int64_t low, high;
  double end;
  bool is_write;
  Engine engine;
  int32_t group;  // nonzero: one transfer's pieces, which never wait on each other
};

// One on-chip access: partitions [first, last) × bytes [low, high) of SBUF or PSUM (absolute
// addresses inside each partition), and when it ends.
struct ChipAccess {
  int64_t first, last, low, high;
  double end;
  bool is_write;
  Engine engine;
  int32_t group;  // as HbmAccess::group

  bool meets(int64_t p0, int64_t p1, int64_t lo, int64_t hi) const {
    return first < p1 && p0 < last && low < hi && lo < high;
  }
  bool inside(int64_t p0, int64_t p1, int64_t lo, int64_t hi) const {
    return p0 <= first && last <= p1 && lo <= low && high <= hi;
  }
};

// Dependencies at the exact bytes and partitions each access touches (its extent: the span
// from its first to its last element in each partition). A write supersedes every earlier
// access inside its rectangle: it started after they ended, so anything that waits on it
// waits on them too; the lists therefore hold about the live tiles, not the history.
class DependencyTracker {
 public:
  DependencyTracker(const Program& program, const CoreProfile& profile, const Layout& layout)
      : program_(program), layout_(layout) {
    hbm_.resize(program.buffers.size());
    hbm_floor_.assign(program.buffers.size(), 0.0);
  }

  // Earliest start for an access by `engine`; `sync_ns` is added when it waits on another one.
  // Accesses of the same nonzero `group` (pieces of one transfer, disjoint by construction
  // though their extents interleave) are not waited on.
  double ready(const AccessPattern& ap, bool is_write, Engine engine, double sync_ns,
               int32_t group = 0) const {
    if (!ap.valid()) return 0;
    int64_t low, high;
    extent(program_, ap, &low, &high);
    const Memory memory = program_.buffers[ap.buffer].memory;
    double ready_at = 0;
    auto consider = [&](double end, Engine other) {
      ready_at = std::max(ready_at, end + (other != engine && end > 0 ? sync_ns : 0.0));
    };
    if (memory == Memory::kHbm) {
      consider(hbm_floor_[ap.buffer], Engine::kCount);
      for (const auto& access : hbm_[ap.buffer]) {
        if (access.high <= low || access.low >= high) continue;
        if (group != 0 && access.group == group) continue;
        if (access.is_write || is_write) consider(access.end, access.engine);
      }
      return ready_at;
    }
    const int memory_index = memory == Memory::kPsum ? 1 : 0;
    const int64_t base = layout_.base[ap.buffer];
    const int64_t first = ap.start_partition, last = first + ap.partitions();
    consider(chip_floor_[memory_index], Engine::kCount);
    for (const ChipAccess& access : chip_[memory_index]) {
      if (!access.meets(first, last, base + low, base + high)) continue;
      if (group != 0 && access.group == group) continue;
      // Reads wait on writes (RAW); writes on both (WAW, WAR: any engine's read needs a sync).
      if (access.is_write) {
        consider(access.end, access.engine);
      } else if (is_write) {
        consider(access.end, Engine::kCount);
      }
    }
    return ready_at;
  }

  void record(const AccessPattern& ap, bool is_write, Engine engine, double end,
              int32_t group = 0) {
    if (!ap.valid()) return;
    int64_t low, high;
    extent(program_, ap, &low, &high);
    const Memory memory = program_.buffers[ap.buffer].memory;
    if (memory == Memory::kHbm) {
      auto& accesses = hbm_[ap.buffer];
      accesses.push_back({low, high, end, is_write, engine, group});
      if (accesses.size() > 512) {
        hbm_floor_[ap.buffer] = std::max(hbm_floor_[ap.buffer], accesses.front().end);
        accesses.pop_front();
      }
      return;
    }
    const int memory_index = memory == Memory::kPsum ? 1 : 0;
    auto& accesses = chip_[memory_index];
    const int64_t base = layout_.base[ap.buffer];
    const int64_t first = ap.start_partition, last = first + ap.partitions();
    const ChipAccess access{first, last, base + low, base + high, end, is_write, engine, group};
    if (is_write) {
      accesses.erase(std::remove_if(accesses.begin(), accesses.end(),
                                    [&](const ChipAccess& old) {
                                      return old.inside(first, last, access.low, access.high);
                                    }),
                     accesses.end());
    } else {
      // A read of the region an earlier read covered exactly extends that one.
      for (ChipAccess& old : accesses) {
        if (!old.is_write && old.engine == engine && old.group == group && old.first == first &&
            old.last == last && old.low == access.low && old.high == access.high) {
          old.end = std::max(old.end, end);
          return;
        }
      }
    }
    accesses.push_back(access);
    if (accesses.size() > kMaxChipAccesses) {
      // Forget the older half, conservatively: everything then waits for the latest of them.
      const auto half = accesses.begin() + static_cast<std::ptrdiff_t>(accesses.size() / 2);
      for (auto it = accesses.begin(); it != half; ++it)
        chip_floor_[memory_index] = std::max(chip_floor_[memory_index], it->end);
      accesses.erase(accesses.begin(), half);
    }
  }

 private:
  static constexpr size_t kMaxChipAccesses = 4096;

  const Program& program_;
  const Layout& layout_;
  std::vector<ChipAccess> chip_[2];  // SBUF, PSUM
  double chip_floor_[2] = {0, 0};
  std::vector<std::deque<HbmAccess>> hbm_;
  std::vector<double> hbm_floor_;
};

double engine_ghz(const CoreProfile& profile, Engine engine) {
  switch (engine) {
    case Engine::kTensor:
      return profile.tensor_ghz;
    case Engine::kVector:
      return profile.vector_ghz;
    case Engine::kScalar:
      return profile.scalar_ghz;
    default:
      return profile.gpsimd_ghz;
  }
}

// The DMA engines' shared bandwidth as a calendar of busy intervals: a transfer takes the first
// gap after its inputs are ready, so a store waiting on compute does not hold up later loads
// (the hardware spreads DMAs over 16 queues).
class DmaCalendar {
 public:
  double place(double ready, double length) {
    auto it = busy_.upper_bound(ready);
    if (it != busy_.begin()) {
      auto previous = std::prev(it);
      if (previous->second > ready) ready = previous->second;
    }
    while (it != busy_.end() && it->first < ready + length) {
      ready = std::max(ready, it->second);
      ++it;
    }
    double begin = ready, end = ready + length;
    auto next = busy_.lower_bound(begin);
    if (next != busy_.begin()) {
      auto previous = std::prev(next);
      if (previous->second >= begin) {
        begin = previous->first;
        busy_.erase(previous);
      }
    }
    next = busy_.lower_bound(begin);
    if (next != busy_.end() && next->first <= end) {
      end = std::max(end, next->second);
      busy_.erase(next);
    }
    busy_[begin] = end;
    return ready;
  }

 private:
  std::map<double, double> busy_;
};

// Length of the union of intervals.
double covered(std::vector<std::pair<double, double>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  double total = 0, reach = -1;
  for (const auto& [begin, end] : intervals) {
    if (end <= reach) continue;
    total += end - std::max(begin, reach);
    reach = end;
  }
  return total;
}

// The LoadStationary part of a matmul: min(64, M) cycles (×4 for fp32), the first term of the
// published max(min(64, M), N).
double stationary_load_ns(const Instruction& ins, const CoreProfile& profile) {
  int64_t cycles = std::min(profile.matmul_min_stationary, ins.src[0].free_size());
  if (ins.src[0].dtype == DType::kFloat32) cycles *= profile.fp32_matmul_factor;
  return static_cast<double>(cycles) / profile.tensor_ghz;
}

// The MultiplyMoving part: N cycles (×4 for fp32).
double moving_ns(const Instruction& ins, const CoreProfile& profile) {
  int64_t cycles = ins.src[1].free_size();
  if (ins.src[0].dtype == DType::kFloat32) cycles *= profile.fp32_matmul_factor;
  return static_cast<double>(cycles) / profile.tensor_ghz;
}

}  // namespace

double instruction_cost_ns(const Program& program, const Instruction& ins,
                           const CoreProfile& profile) {
  const AccessPattern& a = ins.src[0];
  const int64_t floor_cycles = profile.min_instruction_cycles;
  const int64_t fixed = profile.sbuf_access_cycles;
  int64_t cycles = 0;
  switch (ins.opcode) {
    case Opcode::kMatmul: {
      const int64_t m = a.free_size(), n = ins.src[1].free_size();
      cycles = std::max(std::min(profile.matmul_min_stationary, m), n);
      if (a.dtype == DType::kFloat32) cycles *= profile.fp32_matmul_factor;
      break;
    }
    case Opcode::kMatmulMx: {
      // One pass at the bf16 rate, four values per element: 4x bf16's flops, as NeuronCore-v4's
      // published 315 MXFP8/MXFP4 TFLOPS against 84 BF16 TFLOPS a core (671 / 8) gives.
      const int64_t m = a.free_size(), n = ins.src[1].free_size();
      cycles = std::max(std::min(profile.matmul_min_stationary, m), n);
      break;
    }
    case Opcode::kQuantizeMx:
      // No published cost: a Vector pass over the input, as tensor_scalar with a reduction.
      cycles = std::max(floor_cycles, free_elements(a)) + fixed + profile.activation_reduce_cycles;
      break;
    case Opcode::kTranspose: {
      cycles = std::max(a.partitions(), std::min<int64_t>(64, a.free_size()));
      if (a.dtype == DType::kFloat32) cycles *= profile.fp32_matmul_factor;
      break;
    }
    case Opcode::kDmaCopy:
    case Opcode::kDmaCompute: {
      AccessPattern src = a, dst = ins.dst;
      // A vector offset makes every row its own chunk; reading the offsets costs the engine
      // that generates the descriptors a fixed time first.
      double index_ns = 0;
      if (ins.indirect.active()) {
        AccessPattern& moved = ins.indirect.on_dst ? dst : src;
        if (ins.indirect.kind == IndirectKind::kVector && moved.dims[0].size > 1)
          moved.dims[0].stride = std::numeric_limits<int64_t>::max() / 4;
        index_ns = static_cast<double>(profile.indirect_index_cycles) / profile.gpsimd_ghz;
      }
      int64_t read_bytes = src.elements() * dtype_size(src.dtype);
      // dma_compute reads each of its sources (the DMA engine's adder is not modelled).
      for (int s = 1; s < 3 && ins.opcode == Opcode::kDmaCompute; ++s) {
        if (ins.src[s].valid()) read_bytes += ins.src[s].elements() * dtype_size(ins.src[s].dtype);
      }
      const int64_t bytes = std::max(read_bytes, dst.elements() * dtype_size(dst.dtype));
      // A transfer moves in chunks contiguous on both sides, one descriptor each; a
      // dma_transpose's engines reorder elements themselves, so only one side need be
      // contiguous. The pieces of one transfer spread over every engine.
      const int64_t src_chunk = ins.dma_transpose ? contiguous_bytes_in_memory_order(program, src)
                                                  : contiguous_bytes(program, src);
      const int64_t dst_chunk = ins.dma_transpose ? contiguous_bytes_in_memory_order(program, dst)
                                                  : contiguous_bytes(program, dst);
      const int64_t chunk = std::max<int64_t>(
          1, ins.dma_transpose ? std::max(src_chunk, dst_chunk) : std::min(src_chunk, dst_chunk));
      const int64_t descriptors = std::max<int64_t>(1, (bytes + chunk - 1) / chunk);
      const double lanes = static_cast<double>(
          ins.transfer_piece ? profile.dma_engines
                             : std::min<int64_t>(profile.dma_engines, descriptors));
      return index_ns + (descriptors * profile.dma_descriptor_ns +
                         bytes / profile.dma_bytes_per_ns_per_engine) /
                            lanes;
    }
    case Opcode::kTensorTensor: {
      const int64_t n = free_elements(a);
      const bool one_in_psum = on_psum(program, a) || on_psum(program, ins.src[1]);
      const bool fast_bf16 =
          a.dtype == DType::kBFloat16 && ins.src[1].dtype == DType::kBFloat16 &&
          ins.dst.dtype == DType::kBFloat16 &&
          (ins.alu0 == AluOp::kAdd || ins.alu0 == AluOp::kSubtract || ins.alu0 == AluOp::kMultiply);
      cycles = std::max(floor_cycles, (one_in_psum || fast_bf16) ? n : 2 * n) + fixed;
      break;
    }
    case Opcode::kTensorReduce: {
      const int64_t n = free_elements(a);
      const bool half =
          a.dtype == DType::kBFloat16 && (ins.alu0 == AluOp::kAdd || ins.alu0 == AluOp::kMax);
      cycles = std::max(floor_cycles, half ? n / 2 : n) + fixed;
      break;
    }
    case Opcode::kSelect:
    case Opcode::kTensorTensorScan:
      cycles = std::max(floor_cycles, 2 * free_elements(a)) + fixed;
      break;
    case Opcode::kActivation:
      cycles = std::max(floor_cycles, free_elements(a)) + fixed +
               (ins.alu1 != AluOp::kBypass ? profile.activation_reduce_cycles : 0);
      break;
    case Opcode::kTensorScalar:  // a fused row reduction costs what activation's does
      cycles = std::max(floor_cycles, free_elements(a)) + fixed +
               (ins.dst2.valid() ? profile.activation_reduce_cycles : 0);
      break;
    case Opcode::kIota:
    case Opcode::kAffineSelect:
      cycles = profile.iota_fixed_cycles + free_elements(ins.dst);
      break;
    case Opcode::kPartitionReduce:
      // GpSimd's 8 cores hold 16 partitions each: the partitions are combined 16 at a time.
      cycles = profile.iota_fixed_cycles + free_elements(a) * ((a.partitions() + 15) / 16);
      break;
    case Opcode::kMemset:
      cycles = std::max(floor_cycles, free_elements(ins.dst)) + fixed;
      break;
    case Opcode::kNonzeroWithCount:
      // The eight GpSimd cores scan their partition at once, an element a cycle (no published
      // figure), then write F + 1 values.
      cycles = profile.iota_fixed_cycles + 2 * free_elements(a) + 1;
      break;
    case Opcode::kNGather:
      // No published cost: one fixed start per group of 512 gathered elements (the groups of
      // ISA instructions the API reference describes), then an element a cycle.
      cycles = profile.iota_fixed_cycles * ((free_elements(ins.dst) + 511) / 512) +
               free_elements(ins.dst);
      break;
    case Opcode::kTensorCopyPredicated: {
      // The published cost: max(MIN_II, N), or max(MIN_II, 2N) when both inputs are in SBUF.
      const int64_t n = free_elements(ins.dst);
      const bool one_in_psum = on_psum(program, ins.src[1]) || (a.valid() && on_psum(program, a));
      cycles = std::max(floor_cycles, one_in_psum ? n : 2 * n) + fixed;
      break;
    }
    default:
      cycles = std::max(floor_cycles, free_elements(a.valid() ? a : ins.dst)) + fixed;
      break;
  }
  return static_cast<double>(cycles) / engine_ghz(profile, ins.engine);
}

Timeline schedule(const Program& program, const CoreProfile& profile, const Layout& layout) {
  Timeline timeline;
  timeline.instructions.resize(program.instructions.size());
  DependencyTracker tracker(program, profile, layout);
  double engine_free[static_cast<int>(Engine::kCount)] = {0, 0, 0, 0, 0};
  const double sync_ns = profile.semaphore_wait_cycles / profile.gpsimd_ghz;
  DmaCalendar dma;
  std::vector<std::pair<double, double>> dma_in_flight;
  int32_t last_group = 0;          // the latest multi-DMA transfer's group
  double tensor_weights_free = 0;  // when the PE array can take the next stationary tensor
  for (size_t i = 0; i < program.instructions.size(); ++i) {
    const Instruction& ins = program.instructions[i];
    // A barrier waits for the other cores, whose schedules are their own: no work here.
    if (ins.opcode == Opcode::kCoreBarrier) continue;
    const int engine = static_cast<int>(ins.engine);
    // The pieces of one transfer (a dma_transpose's per-partition DMAs) share a group.
    if (ins.transfer_piece && !ins.continues_transfer) ++last_group;
    const int32_t group = ins.transfer_piece ? last_group : 0;
    const double engine_was_free = ins.engine == Engine::kDma ? 0.0 : engine_free[engine];
    // When the operands are ready, with and without the semaphore wait on other engines.
    double ready = 0, ready_unsynced = 0;
    auto consider = [&](const AccessPattern& ap, bool is_write) {
      ready = std::max(ready, tracker.ready(ap, is_write, ins.engine, sync_ns, group));
      ready_unsynced =
          std::max(ready_unsynced, tracker.ready(ap, is_write, ins.engine, 0.0, group));
    };
    // An operand with a run-time offset may touch anything its offsets can reach.
    const AccessPattern dst_reach = indirect_reach(program, ins, ins.dst);
    const AccessPattern src_reach = indirect_reach(program, ins, ins.src[0]);
    consider(dst_reach, true);
    consider(ins.dst2, true);
    consider(src_reach, false);
    for (int s = 1; s < 4; ++s) consider(ins.src[s], false);
    consider(ins.indirect.index, false);
    double start = std::max(engine_was_free, ready);
    // The dependent-instruction overhead is work of the waiting engine: the part of it that
    // falls after the engine's previous instruction keeps the engine busy.
    const double wait_overhead =
        ins.engine == Engine::kDma
            ? 0.0
            : std::max(0.0, start - std::max(engine_was_free, ready_unsynced));
    const double cost = instruction_cost_ns(program, ins, profile);
    double end = start + cost;
    EngineSummary& summary = timeline.engines[engine];
    if (ins.opcode == Opcode::kMatmul || ins.opcode == Opcode::kMatmulMx) {
      // LoadStationary, then MultiplyMoving. The array takes the next stationary tensor while
      // the current moving one streams, so a matmul whose operands are resident loads during
      // the previous one; one that waits for its operands (one semaphore wait per instruction,
      // covering both) loads after the wait, exposed, and the load keeps the engine busy.
      const double load = stationary_load_ns(ins, profile);
      const double operands_ready = std::max(tracker.ready(ins.src[0], false, ins.engine, sync_ns),
                                             tracker.ready(ins.src[1], false, ins.engine, sync_ns));
      const double load_start = std::max(operands_ready, tensor_weights_free);
      const double load_end = load_start + load;
      const double moving_start = std::max(load_end, start);
      const double exposed = std::max(0.0, load_end - std::max(load_start, engine_was_free));
      start = moving_start - exposed;
      end = moving_start + moving_ns(ins, profile);
      tensor_weights_free = moving_start;
      engine_free[engine] = end;
      summary.busy_ns += end - moving_start + exposed + wait_overhead;
    } else if (ins.engine == Engine::kDma) {
      // Bandwidth is taken for the transfer; the data lands after the fixed latency too.
      start = dma.place(start, cost);
      end = start + cost + profile.dma_fixed_ns;
      dma_in_flight.emplace_back(start, end);
      timeline.dma_bytes += ins.src[0].elements() * dtype_size(ins.src[0].dtype);
    } else {
      engine_free[engine] = end;
      summary.busy_ns += cost + wait_overhead;
      if (ins.engine == Engine::kTensor) tensor_weights_free = end;  // a transpose reloads it
    }
    if (ins.opcode == Opcode::kMatmul) {
      timeline.matmul_flops += 2 * ins.src[0].elements() * ins.src[1].free_size();
    } else if (ins.opcode == Opcode::kMatmulMx) {  // four values an element
      timeline.matmul_flops += 8 * ins.src[0].elements() * ins.src[1].free_size();
    }
    summary.instructions += 1;
    tracker.record(dst_reach, true, ins.engine, end, group);
    tracker.record(ins.dst2, true, ins.engine, end, group);
    tracker.record(src_reach, false, ins.engine, end, group);
    for (int s = 1; s < 4; ++s) tracker.record(ins.src[s], false, ins.engine, end);
    tracker.record(ins.indirect.index, false, ins.engine, end);
    timeline.instructions[i] = {start, end};
    timeline.total_ns = std::max(timeline.total_ns, end);
  }
  timeline.engines[static_cast<int>(Engine::kDma)].busy_ns = covered(std::move(dma_in_flight));
  for (auto& summary : timeline.engines) {
    summary.utilization = timeline.total_ns > 0 ? summary.busy_ns / timeline.total_ns : 0.0;
  }
  return timeline;
}

std::string chrome_trace(const Program& program, const Timeline& timeline,
                         const std::string& profile_name) {
  std::string out = "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"profile\":\"" + profile_name +
                    "\"},\"traceEvents\":[";
  char buffer[512];
  for (int e = 0; e < static_cast<int>(Engine::kCount); ++e) {
    std::snprintf(buffer, sizeof(buffer),
                  "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":%d,"
                  "\"args\":{\"name\":\"%s\"}}",
                  e ? "," : "", e, engine_name(static_cast<Engine>(e)));
    out += buffer;
  }
  for (size_t i = 0; i < program.instructions.size(); ++i) {
    const Instruction& ins = program.instructions[i];
    const InstructionTiming& t = timeline.instructions[i];
    std::snprintf(buffer, sizeof(buffer),
                  ",{\"name\":\"%s\",\"ph\":\"X\",\"pid\":0,\"tid\":%d,\"ts\":%.4f,\"dur\":%.4f,"
                  "\"args\":{\"line\":%d,\"index\":%zu}}",
                  opcode_name(ins.opcode), static_cast<int>(ins.engine), t.start_ns / 1000.0,
                  (t.end_ns - t.start_ns) / 1000.0, ins.line, i);
    out += buffer;
  }
  out += "]}";
  return out;
}

}  // namespace openneuron::sim
