// The projected time of an eager ATen op on one NeuronCore, from the same instruction costs the
// simulator's timing model uses (timing.h, profile.h): the op is laid out as the kernel library
// would tile it, each tile's instructions are costed on their engines, and the op takes as long
// as its busiest engine plus one DMA latency (loads of the next tile overlap compute).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/dtype.h"
#include "sim/isa.h"
#include "sim/profile.h"

namespace openneuron::sim {

struct OpCost {
  double engine_ns[static_cast<int>(Engine::kCount)] = {0, 0, 0, 0, 0};
  double total_ns = 0;
  int64_t instructions = 0;
  double flops = 0;
  int64_t dma_bytes = 0;
  Engine bound = Engine::kDma;  // the busiest engine
};

// batch × [m, k] @ [k, n]: 128 × 128 × 512 tiles on the Tensor engine (operand loads hidden,
// as in a kernel with resident operands), PSUM evacuated by the Vector engine, every operand
// and the result moved once over DMA.
OpCost matmul_cost(const CoreProfile& profile, int64_t batch, int64_t m, int64_t k, int64_t n,
                   DType dtype);

// One pass of a row-wise op over a [rows, cols] tile: the instruction and its engine.
struct Pass {
  Opcode opcode;
  int inputs;  // tensor inputs of the instruction (1 or 2)
};

// An op made of `passes` over `rows` × `cols` elements (rows on partitions, 128 at a time, at
// most 2048 columns per tile), reading `bytes_in` and writing `bytes_out` of HBM.
OpCost rows_cost(const CoreProfile& profile, int64_t rows, int64_t cols,
                 const std::vector<Pass>& passes, DType dtype, int64_t bytes_in, int64_t bytes_out);

}  // namespace openneuron::sim
