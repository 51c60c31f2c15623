// The timing model: published instruction costs, engine overlap, dependencies, the trace.
#include "sim/timing.h"

#include <gtest/gtest.h>

#include "sim/simulator.h"
#include "sim/tests/program_builder.h"

namespace openneuron::sim {
namespace {

using testing::ProgramBuilder;

TEST(Timing, MatmulCostFollowsThePublishedFormula) {
  const CoreProfile& trn2 = core_profile("trn2");
  ProgramBuilder b;
  const int32_t s = b.tile("s", Memory::kSbuf, DType::kBFloat16, 128, 128);
  const int32_t m = b.tile("m", Memory::kSbuf, DType::kBFloat16, 128, 512);
  const int32_t r = b.tile("r", Memory::kPsum, DType::kFloat32, 128, 512);
  Instruction& ins =
      b.add(Opcode::kMatmul, b.ap(r, {128, 512}), {b.ap(s, {128, 128}), b.ap(m, {128, 512})});
  EXPECT_DOUBLE_EQ(instruction_cost_ns(b.program(), ins, trn2), 512 / 2.4);
  ins.src[1] = b.ap(m, {128, 16});
  ins.dst = b.ap(r, {128, 16});
  EXPECT_DOUBLE_EQ(instruction_cost_ns(b.program(), ins, trn2), 64 / 2.4);  // min(64, M)
  ins.src[0].dtype = ins.src[1].dtype = DType::kFloat32;
  EXPECT_DOUBLE_EQ(instruction_cost_ns(b.program(), ins, trn2), 4 * 64 / 2.4);
}

// Back-to-back matmuls on resident operands load each stationary tensor while the previous
// moving one streams (max(min(64, M), N) apiece); a matmul that waits for a DMA of its operands
// loads after the wait, so its LoadStationary and the semaphore wait keep the engine busy.
TEST(Timing, StationaryLoadsOverlapOnlyWhenOperandsAreResident) {
  const CoreProfile& trn2 = core_profile("trn2");
  ProgramBuilder b;  // fp32 tiles: 512-byte multiples, so no two share a dependency block
  const int32_t in = b.hbm("in", DType::kFloat32, 128 * 128, true);
  const int32_t s = b.tile("s", Memory::kSbuf, DType::kFloat32, 128, 128);
  const int32_t m = b.tile("m", Memory::kSbuf, DType::kFloat32, 128, 512);
  const int32_t late = b.tile("late", Memory::kSbuf, DType::kFloat32, 128, 128);
  const int32_t r = b.tile("r", Memory::kPsum, DType::kFloat32, 128, 512);
  b.add(Opcode::kMemset, b.ap(s, {128, 128}), {});
  b.add(Opcode::kMemset, b.ap(m, {128, 512}), {});
  AccessPattern columns = b.ap(in, {128, 128});  // read transposed: 4-byte chunks, a slow DMA
  columns.dims[0].stride = 1;
  columns.dims[1].stride = 128;
  b.add(Opcode::kDmaCopy, b.ap(late, {128, 128}), {columns});
  for (int i = 0; i < 4; ++i)
    b.add(Opcode::kMatmul, b.ap(r, {128, 512}), {b.ap(s, {128, 128}), b.ap(m, {128, 512})});
  b.add(Opcode::kMatmul, b.ap(r, {128, 512}), {b.ap(late, {128, 128}), b.ap(m, {128, 512})});
  Simulator simulator(b.program(), trn2);
  const Timeline t = simulator.timing();
  const double moving = 4 * 512 / 2.4, load = 4 * 64 / 2.4;  // fp32: four passes
  for (int i = 4; i <= 5; ++i)                               // resident: one moving phase apart
    EXPECT_NEAR(t.instructions[i + 1].end_ns - t.instructions[i].end_ns, moving, 1e-6);
  const double sync = trn2.semaphore_wait_cycles / trn2.gpsimd_ghz;
  const InstructionTiming& dma = t.instructions[2];
  const InstructionTiming& waiting = t.instructions[7];
  EXPECT_NEAR(waiting.end_ns, dma.end_ns + sync + load + moving, 1e-6);
  // The first matmul waited on the memsets (its load exposed too), the last on the DMA.
  const double first = t.instructions[3].end_ns - t.instructions[3].start_ns;
  EXPECT_NEAR(first, load + moving, 1e-6);
  EXPECT_NEAR(t.engines[static_cast<int>(Engine::kTensor)].busy_ns,
              5 * moving + 2 * load + 2 * sync, 1e-6);
}

TEST(Timing, IndependentEnginesOverlapAndDependenciesSerialise) {
  const CoreProfile& trn2 = core_profile("trn2");
  ProgramBuilder b;
  const int32_t x = b.tile("x", Memory::kSbuf, DType::kFloat32, 128, 2048);
  const int32_t y = b.tile("y", Memory::kSbuf, DType::kFloat32, 128, 2048);
  const int32_t z = b.tile("z", Memory::kSbuf, DType::kFloat32, 128, 2048);
  b.add(Opcode::kMemset, b.ap(x, {128, 2048}), {});                          // vector
  b.add(Opcode::kIota, b.ap(y, {128, 2048}), {});                            // gpsimd
  b.add(Opcode::kActivation, b.ap(z, {128, 2048}), {b.ap(x, {128, 2048})});  // scalar, on x
  Simulator simulator(b.program(), trn2);
  const Timeline timeline = simulator.timing();
  EXPECT_EQ(timeline.instructions[1].start_ns, 0.0);  // iota does not wait for memset
  EXPECT_GE(timeline.instructions[2].start_ns,
            timeline.instructions[0].end_ns + trn2.semaphore_wait_cycles / trn2.gpsimd_ghz);
  EXPECT_NEAR(timeline.engines[static_cast<int>(Engine::kVector)].busy_ns, (2048 + 60) / 0.96,
              1e-6);
}

// Dependencies are tracked at the bytes and partitions an access touches: small tiles next to
// each other (one 512-byte stretch of every partition) and the two partition halves of one tile
// do not wait on each other; overlapping ones still do.
TEST(Timing, OnlyOverlappingBytesAndPartitionsDepend) {
  const CoreProfile& trn2 = core_profile("trn2");
  ProgramBuilder b;
  const int32_t a = b.tile("a", Memory::kSbuf, DType::kFloat32, 128, 16);  // 64 B per partition
  const int32_t c = b.tile("c", Memory::kSbuf, DType::kFloat32, 128, 16);
  const int32_t h = b.tile("h", Memory::kSbuf, DType::kFloat32, 128, 16);
  const int32_t out = b.tile("out", Memory::kSbuf, DType::kFloat32, 128, 16);
  b.add(Opcode::kMemset, b.ap(a, {128, 16}), {});                          // 0: vector
  b.add(Opcode::kIota, b.ap(c, {128, 16}), {});                            // 1: gpsimd, next to a
  b.add(Opcode::kMemset, b.ap(h, {64, 16}), {});                           // 2: vector, low half
  b.add(Opcode::kIota, b.ap(h, {64, 16}, 0, 64), {});                      // 3: gpsimd, high half
  b.add(Opcode::kActivation, b.ap(out, {128, 16}), {b.ap(a, {128, 16})});  // 4: reads a
  b.add(Opcode::kIota, b.ap(h, {32, 16}, 0, 32), {});                      // 5: gpsimd, inside 2
  b.add(Opcode::kMemset, b.ap(a, {128, 16}), {});  // 6: vector, overwrites what 4 reads
  Simulator simulator(b.program(), trn2);
  ASSERT_LT(simulator.layout().base[c] - simulator.layout().base[a], 512);  // one old block
  const Timeline t = simulator.timing();
  const double sync = trn2.semaphore_wait_cycles / trn2.gpsimd_ghz;
  EXPECT_EQ(t.instructions[1].start_ns, 0.0);  // was: after memset a (same 512-byte block)
  EXPECT_EQ(t.instructions[3].start_ns, t.instructions[1].end_ns);  // gpsimd's own order only
  EXPECT_GE(t.instructions[4].start_ns, t.instructions[0].end_ns + sync);  // true RAW
  EXPECT_GE(t.instructions[5].start_ns, t.instructions[2].end_ns + sync);  // true WAW
  EXPECT_GT(t.instructions[4].end_ns, t.instructions[2].end_ns);           // so 6 must wait for 4:
  EXPECT_GE(t.instructions[6].start_ns, t.instructions[4].end_ns + sync);  // true WAR
}

TEST(Timing, DmaIsOverheadBoundForSmallChunksAndFasterOnTrn3) {
  auto dma_time = [](int64_t row_elements, const std::string& profile) {
    ProgramBuilder b;
    const int64_t total = 128 * 4096;
    const int32_t in = b.hbm("in", DType::kFloat32, total, true);
    const int64_t rows = total / row_elements;
    const int32_t t = b.tile("t", Memory::kSbuf, DType::kFloat32, 128, 8192);
    // Rows of `row_elements` contiguous floats, every other row's worth of SBUF skipped.
    AccessPattern dst = b.ap(t, {128, rows / 128, row_elements});
    dst.dims[1].stride = 2 * row_elements;
    AccessPattern src = b.ap(in, {128, rows / 128, row_elements});
    b.add(Opcode::kDmaCopy, dst, {src});
    Simulator simulator(b.program(), core_profile(profile));
    return simulator.timing().total_ns;
  };
  const double small = dma_time(32, "trn2");    // 128 B chunks
  const double large = dma_time(4096, "trn2");  // 16 KiB chunks
  EXPECT_GT(small, 1.5 * large);
  EXPECT_LT(dma_time(4096, "trn3"), large);
}

// dma_transpose of an on-chip [128, 4 x 128] bf16 tile, four 128 x 128 blocks, as AWS's
// attention kernel issues it: one DMA per source partition p, writing column p of every block
// (one element into every partition, four times). The pieces' extents interleave though their
// elements do not; as plain copies each would wait for the one before (WAW on the extent) and
// pay a descriptor per element. The transposing engines move them as one transfer.
TEST(Timing, DmaTransposeMovesAtTheEnginesRateNotPerElement) {
  auto transpose_time = [](bool transposing) {
    ProgramBuilder b;
    const int32_t src = b.tile("src", Memory::kSbuf, DType::kBFloat16, 128, 512);
    const int32_t dst = b.tile("dst", Memory::kSbuf, DType::kBFloat16, 128, 512);
    b.add(Opcode::kMemset, b.ap(src, {128, 512}), {});
    for (int32_t p = 0; p < 128; ++p) {
      // Walked as the transpose orders it: element j of each block, then the next block.
      AccessPattern row = b.ap(src, {1, 128, 4}, 0, p);
      row.dims[1].stride = 1;
      row.dims[2].stride = 128;
      AccessPattern columns = b.ap(dst, {128, 1, 4}, p);
      columns.dims[2].stride = 128;
      Instruction& piece = b.add(Opcode::kDmaCopy, columns, {row});
      piece.dma_transpose = piece.transfer_piece = transposing;
      piece.continues_transfer = transposing && p > 0;
    }
    Simulator simulator(b.program(), core_profile("trn2"));
    return simulator.timing().total_ns;
  };
  const CoreProfile& trn2 = core_profile("trn2");
  const double tile_bytes = 128.0 * 512 * 2;
  // As one transfer: a descriptor per 1 KiB source row, all 16 engines, one DMA's latency.
  const double one_transfer =
      (128 * trn2.dma_descriptor_ns + tile_bytes / trn2.dma_bytes_per_ns_per_engine) /
      trn2.dma_engines;
  const double transposed = transpose_time(true);
  EXPECT_LT(transposed, one_transfer + trn2.dma_fixed_ns + 1000.0);
  EXPECT_GT(transpose_time(false), 10 * transposed);
}

TEST(Timing, ChromeTraceHasOneTrackPerEngineAndOneSlicePerInstruction) {
  ProgramBuilder b;
  const int32_t in = b.hbm("in", DType::kFloat32, 64, true);
  const int32_t t = b.tile("t", Memory::kSbuf, DType::kFloat32, 8, 8);
  b.add(Opcode::kDmaCopy, b.ap(t, {8, 8}), {b.ap(in, {8, 8})});
  b.add(Opcode::kActivation, b.ap(t, {8, 8}), {b.ap(t, {8, 8})});
  Simulator simulator(b.program(), core_profile("trn2"));
  const std::string trace = chrome_trace(simulator.program(), simulator.timing(), "trn2");
  EXPECT_NE(trace.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(trace.find("\"name\":\"dma_copy\""), std::string::npos);
  EXPECT_NE(trace.find("\"name\":\"activation\""), std::string::npos);
  EXPECT_NE(trace.find("\"line\":11"), std::string::npos);
  EXPECT_NE(trace.find("\"name\":\"gpsimd\""), std::string::npos);
}

}  // namespace
}  // namespace openneuron::sim
