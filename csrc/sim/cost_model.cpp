#include "sim/cost_model.h"

#include <algorithm>

#include "sim/timing.h"

namespace openneuron::sim {

namespace {

constexpr int64_t kMaxTileColumns = 2048;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A program holding one SBUF buffer, one PSUM buffer and one HBM buffer of `dtype`, so
// instructions over them can be costed.
Program scratch_program(DType dtype) {
  Program program;
  program.buffers.resize(3);
  program.buffers[0].memory = Memory::kSbuf;
  program.buffers[1].memory = Memory::kPsum;
  program.buffers[2].memory = Memory::kHbm;
  for (auto& buffer : program.buffers) buffer.dtype = dtype;
  return program;
}

AccessPattern tile(int32_t buffer, DType dtype, int64_t partitions, int64_t columns) {
  AccessPattern ap;
  ap.buffer = buffer;
  ap.dtype = dtype;
  ap.rank = 2;
  ap.dims[0] = {partitions, 1};
  ap.dims[1] = {columns, 1};
  return ap;
}

void add(OpCost& cost, const Program& program, const Instruction& ins, const CoreProfile& profile,
         int64_t times) {
  cost.engine_ns[static_cast<int>(ins.engine)] +=
      instruction_cost_ns(program, ins, profile) * static_cast<double>(times);
  cost.instructions += times;
}

// DMA of `bytes` in tiles of `partitions` × `columns` elements.
void add_dma(OpCost& cost, const Program& program, const CoreProfile& profile, DType dtype,
             int64_t bytes, int64_t partitions, int64_t columns) {
  if (bytes <= 0) return;
  Instruction ins;
  ins.opcode = Opcode::kDmaCopy;
  ins.engine = Engine::kDma;
  ins.dst = tile(0, dtype, partitions, columns);
  ins.src[0] = tile(2, dtype, partitions, columns);
  const int64_t tile_bytes = partitions * columns * dtype_size(dtype);
  add(cost, program, ins, profile, ceil_div(bytes, tile_bytes));
  cost.dma_bytes += bytes;
}

void finish(OpCost& cost, const CoreProfile& profile) {
  int busiest = static_cast<int>(Engine::kDma);
  for (int e = 0; e < static_cast<int>(Engine::kCount); ++e) {
    if (cost.engine_ns[e] > cost.engine_ns[busiest]) busiest = e;
  }
  cost.bound = static_cast<Engine>(busiest);
  cost.total_ns = cost.engine_ns[busiest] + profile.dma_fixed_ns;
}

}  // namespace

OpCost matmul_cost(const CoreProfile& profile, int64_t batch, int64_t m, int64_t k, int64_t n,
                   DType dtype) {
  OpCost cost;
  const Program program = scratch_program(dtype);
  const int64_t tiles_m = ceil_div(m, profile.matmul_max_m);
  const int64_t tiles_k = ceil_div(k, profile.matmul_max_k);
  const int64_t tiles_n = ceil_div(n, profile.matmul_max_n);
  const int64_t tile_m = std::min<int64_t>(m, profile.matmul_max_m);
  const int64_t tile_n = std::min<int64_t>(n, profile.matmul_max_n);
  const int64_t tile_k = std::min<int64_t>(k, profile.matmul_max_k);
  Instruction matmul;
  matmul.opcode = Opcode::kMatmul;
  matmul.engine = Engine::kTensor;
  matmul.src[0] = tile(0, dtype, tile_k, tile_m);
  matmul.src[1] = tile(0, dtype, tile_k, tile_n);
  matmul.dst = tile(1, DType::kFloat32, tile_m, tile_n);
  add(cost, program, matmul, profile, batch * tiles_m * tiles_k * tiles_n);
  Instruction evacuate;  // PSUM -> SBUF, one per output tile
  evacuate.opcode = Opcode::kTensorCopy;
  evacuate.engine = Engine::kVector;
  evacuate.src[0] = tile(1, DType::kFloat32, tile_m, tile_n);
  evacuate.dst = tile(0, dtype, tile_m, tile_n);
  add(cost, program, evacuate, profile, batch * tiles_m * tiles_n);
  const int64_t size = dtype_size(dtype);
  add_dma(cost, program, profile, dtype, batch * (m * k + k * n) * size, tile_k, tile_n);
  add_dma(cost, program, profile, dtype, batch * m * n * size, tile_m, tile_n);
  cost.flops = 2.0 * static_cast<double>(batch) * m * k * n;
  finish(cost, profile);
  return cost;
}

OpCost rows_cost(const CoreProfile& profile, int64_t rows, int64_t cols,
                 const std::vector<Pass>& passes, DType dtype, int64_t bytes_in,
                 int64_t bytes_out) {
  OpCost cost;
  const Program program = scratch_program(dtype);
  rows = std::max<int64_t>(rows, 1);
  cols = std::max<int64_t>(cols, 1);
  const int64_t partitions = std::min<int64_t>(rows, profile.partitions);
  const int64_t columns = std::min(cols, kMaxTileColumns);
  const int64_t tiles = ceil_div(rows, profile.partitions) * ceil_div(cols, kMaxTileColumns);
  for (const Pass& pass : passes) {
    Instruction ins;
    ins.opcode = pass.opcode;
    ins.engine = default_engine(pass.opcode);
    ins.dst = tile(0, dtype, partitions, columns);
    for (int s = 0; s < std::min(pass.inputs, 2); ++s)
      ins.src[s] = tile(0, dtype, partitions, columns);
    ins.alu0 = AluOp::kAdd;  // add/subtract/multiply cost alike; others are no cheaper
    add(cost, program, ins, profile, tiles);
    cost.flops += static_cast<double>(rows) * cols;
  }
  add_dma(cost, program, profile, dtype, bytes_in, partitions, columns);
  add_dma(cost, program, profile, dtype, bytes_out, partitions, columns);
  finish(cost, profile);
  return cost;
}

}  // namespace openneuron::sim
