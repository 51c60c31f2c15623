// The eager cost model on shapes whose cost follows by hand from the profile's published
// instruction costs: tile counts, the engine each op lands on, the busiest engine and the DMA.
#include "sim/cost_model.h"

#include <gtest/gtest.h>

#include "sim/profile.h"

namespace openneuron::sim {
namespace {

double ns(int64_t cycles, double ghz) { return static_cast<double>(cycles) / ghz; }
double engine(const OpCost& cost, Engine e) { return cost.engine_ns[static_cast<int>(e)]; }

TEST(CostModel, MatmulTilesRunOnTheTensorEngine) {
  const CoreProfile& trn2 = core_profile("trn2");
  // [512, 1024] @ [1024, 1024]: 4 M tiles × 8 K tiles × 2 N tiles of max(min(64, 128), 512)
  // = 512 cycles each; fp32 passes the array four times.
  const OpCost bf16 = matmul_cost(trn2, 1, 512, 1024, 1024, DType::kBFloat16);
  EXPECT_DOUBLE_EQ(engine(bf16, Engine::kTensor), 4 * 8 * 2 * ns(512, trn2.tensor_ghz));
  EXPECT_DOUBLE_EQ(engine(bf16, Engine::kTensor), 4 * 8 * 2 * 512 / 2.4);  // published clock
  const OpCost fp32 = matmul_cost(trn2, 1, 512, 1024, 1024, DType::kFloat32);
  EXPECT_DOUBLE_EQ(engine(fp32, Engine::kTensor), 4 * engine(bf16, Engine::kTensor));
  EXPECT_EQ(bf16.bound, Engine::kDma);     // 4 MiB of operands outlast 64 bf16 tiles
  EXPECT_EQ(fp32.bound, Engine::kTensor);  // four passes per tile: the array is the limit
  EXPECT_DOUBLE_EQ(fp32.total_ns, engine(fp32, Engine::kTensor) + trn2.dma_fixed_ns);
  EXPECT_DOUBLE_EQ(bf16.flops, 2.0 * 512 * 1024 * 1024);
  EXPECT_EQ(bf16.dma_bytes, (512 * 1024 + 1024 * 1024 + 512 * 1024) * 2);
  // 64 matmuls and 8 PSUM evacuations (one per output tile) on the Vector engine, plus DMAs.
  EXPECT_GT(engine(bf16, Engine::kVector), 0.0);
  EXPECT_GE(bf16.instructions, 64 + 8);
  // A batch repeats every tile.
  const OpCost batched = matmul_cost(trn2, 3, 512, 1024, 1024, DType::kBFloat16);
  EXPECT_DOUBLE_EQ(engine(batched, Engine::kTensor), 3 * engine(bf16, Engine::kTensor));
}

TEST(CostModel, SmallMatmulsPayTheStationaryFloor) {
  const CoreProfile& trn2 = core_profile("trn2");
  // N = 16 moving columns still cost min(64, M) = 64 cycles; M = 32 costs max(32, 16) = 32.
  const OpCost wide = matmul_cost(trn2, 1, 128, 128, 16, DType::kBFloat16);
  EXPECT_DOUBLE_EQ(engine(wide, Engine::kTensor), ns(64, trn2.tensor_ghz));
  const OpCost narrow = matmul_cost(trn2, 1, 32, 128, 16, DType::kBFloat16);
  EXPECT_DOUBLE_EQ(engine(narrow, Engine::kTensor), ns(32, trn2.tensor_ghz));
}

TEST(CostModel, RowPassesCostTheirEnginePerTile) {
  const CoreProfile& trn2 = core_profile("trn2");
  // [4096, 4096] fp32: 32 row tiles × 2 column tiles of [128, 2048].
  const int64_t tiles = 32 * 2, bytes = int64_t{4096} * 4096 * 4;
  const OpCost add =
      rows_cost(trn2, 4096, 4096, {{Opcode::kTensorTensor, 2}}, DType::kFloat32, 2 * bytes, bytes);
  // Two fp32 inputs from SBUF: 2 cycles per element plus the fixed SBUF access.
  EXPECT_DOUBLE_EQ(engine(add, Engine::kVector),
                   tiles * ns(2 * 2048 + trn2.sbuf_access_cycles, trn2.vector_ghz));
  EXPECT_DOUBLE_EQ(engine(add, Engine::kScalar), 0.0);
  EXPECT_EQ(add.bound, Engine::kDma);
  EXPECT_EQ(add.dma_bytes, 3 * bytes);
  const OpCost exp =
      rows_cost(trn2, 4096, 4096, {{Opcode::kActivation, 1}}, DType::kFloat32, bytes, bytes);
  EXPECT_DOUBLE_EQ(engine(exp, Engine::kScalar),
                   tiles * ns(2048 + trn2.sbuf_access_cycles, trn2.scalar_ghz));
  EXPECT_DOUBLE_EQ(engine(exp, Engine::kVector), 0.0);
  // bf16 pairs of Vector operands run at one element per cycle.
  const OpCost bf16 =
      rows_cost(trn2, 4096, 4096, {{Opcode::kTensorTensor, 2}}, DType::kBFloat16, bytes, bytes / 2);
  EXPECT_DOUBLE_EQ(engine(bf16, Engine::kVector),
                   tiles * ns(2048 + trn2.sbuf_access_cycles, trn2.vector_ghz));
  // Three passes and two DMA directions: 3 × 64 compute instructions plus the DMA tiles.
  const OpCost softmax =
      rows_cost(trn2, 4096, 4096,
                {{Opcode::kTensorReduce, 1}, {Opcode::kActivation, 1}, {Opcode::kTensorScalar, 1}},
                DType::kFloat32, bytes, bytes);
  EXPECT_EQ(softmax.instructions, 3 * tiles + 2 * tiles);
  EXPECT_DOUBLE_EQ(softmax.flops, 3.0 * 4096 * 4096);
}

TEST(CostModel, TinyShapesStillCostTheInstructionFloor) {
  const CoreProfile& trn2 = core_profile("trn2");
  // One element: the 64-cycle floor plus the SBUF access, one tile, one DMA each way.
  const OpCost one = rows_cost(trn2, 1, 1, {{Opcode::kTensorTensor, 2}}, DType::kFloat32, 8, 4);
  EXPECT_DOUBLE_EQ(engine(one, Engine::kVector),
                   ns(trn2.min_instruction_cycles + trn2.sbuf_access_cycles, trn2.vector_ghz));
  EXPECT_EQ(one.instructions, 1 + 2 + 1);  // 8 bytes in are two [1, 1] fp32 tiles
  // Zero rows or columns are costed as one (the op still issues).
  const OpCost empty = rows_cost(trn2, 0, 0, {{Opcode::kTensorTensor, 2}}, DType::kFloat32, 0, 0);
  EXPECT_DOUBLE_EQ(engine(empty, Engine::kVector), engine(one, Engine::kVector));
  EXPECT_EQ(empty.dma_bytes, 0);
}

TEST(CostModel, Trn3IsFasterOnTheSameOp) {
  const int64_t bytes = int64_t{1} << 26;
  const std::vector<Pass> add = {{Opcode::kTensorTensor, 2}};
  const OpCost trn2 =
      rows_cost(core_profile("trn2"), 128, 1 << 17, add, DType::kFloat32, 2 * bytes, bytes);
  const OpCost trn3 =
      rows_cost(core_profile("trn3"), 128, 1 << 17, add, DType::kFloat32, 2 * bytes, bytes);
  EXPECT_LT(trn3.total_ns, trn2.total_ns);
  EXPECT_LT(engine(trn3, Engine::kDma), engine(trn2, Engine::kDma));
}

}  // namespace
}  // namespace openneuron::sim
