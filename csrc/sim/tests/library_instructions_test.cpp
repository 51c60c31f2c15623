// The instructions the NKI Library's kernels need beyond the basic set: nc_match_replace8,
// range_select, dma_compute, and the core barrier at which a program's run pauses.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <map>

#include "sim/errors.h"
#include "sim/profile.h"
#include "sim/simulator.h"
#include "sim/tests/program_builder.h"

namespace openneuron::sim {
namespace {

using testing::ProgramBuilder;

const CoreProfile& trn2() { return core_profile("trn2"); }

// Runs on both executors; returns each output of the fast one after checking the reference
// wrote the same bytes.
std::map<int32_t, std::vector<float>> run_both(ProgramBuilder& builder,
                                               const std::map<int32_t, std::vector<float>>& inputs,
                                               std::initializer_list<int32_t> outputs) {
  std::map<int32_t, std::vector<uint8_t>> reference_bytes;
  std::map<int32_t, std::vector<float>> result;
  for (bool reference : {true, false}) {
    Simulator simulator(builder.program(), trn2());
    for (const auto& [buffer, values] : inputs) testing::set_floats(simulator, buffer, values);
    EXPECT_TRUE(simulator.run(reference));
    for (int32_t output : outputs) {
      if (reference) {
        reference_bytes[output] = simulator.hbm(output);
      } else {
        EXPECT_EQ(simulator.hbm(output), reference_bytes[output]) << "executors differ";
        result[output] = testing::read_floats(simulator, output);
      }
    }
  }
  return result;
}

AccessPattern load(ProgramBuilder& b, int32_t hbm, int64_t p, int64_t f, const char* name) {
  const int32_t tile = b.tile(name, Memory::kSbuf, DType::kFloat32, p, f);
  b.add(Opcode::kDmaCopy, b.ap(tile, {p, f}), {b.ap(hbm, {p, f})});
  return b.ap(tile, {p, f});
}

TEST(LibraryInstructions, MatchReplace8TakesValuesLastToFirst) {
  ProgramBuilder b;
  const int64_t f = 12;
  const int32_t x = b.hbm("x", DType::kFloat32, 2 * f, true);
  const int32_t vals = b.hbm("vals", DType::kFloat32, 2 * 8, true);
  const int32_t out = b.hbm("out", DType::kFloat32, 2 * f, false);
  const int32_t where = b.hbm("where", DType::kFloat32, 2 * 8, false);
  const AccessPattern data = load(b, x, 2, f, "data");
  const AccessPattern wanted = load(b, vals, 2, 8, "wanted");
  const int32_t index_tile = b.tile("index", Memory::kSbuf, DType::kFloat32, 2, 8);
  Instruction& replace = b.add(Opcode::kMatchReplace8, data, {data, wanted});
  replace.dst2 = b.ap(index_tile, {2, 8});
  replace.imm0 = -100.0f;
  b.add(Opcode::kDmaCopy, b.ap(out, {2, f}), {data});
  b.add(Opcode::kDmaCopy, b.ap(where, {2, 8}), {b.ap(index_tile, {2, 8})});
  // Row 0: one 3 and seven 8s among the data; row 1: a value absent and a NaN.
  const std::vector<float> input = {1, 2, 3, 4, 8, 8, 8, 8, 8, 8, 8, 0,  //
                                    5, 5, 7, 1, 1, 1, 1, 1, 1, 1, 1, 9};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> probes = {3, 8, 8,  8,   8, 8, 8, 8,  //
                                     5, 5, 42, nan, 7, 9, 1, 1};
  auto result = run_both(b, {{x, input}, {vals, probes}}, {out, where});
  const float none = std::numeric_limits<float>::infinity();  // all ones as an fp32 index
  EXPECT_EQ(result[where], (std::vector<float>{2, 10, 9, 8, 7, 6, 5, 4,  //
                                               1, 0, none, none, 2, 11, 4, 3}));
  EXPECT_EQ(
      result[out],
      (std::vector<float>{1,    2,    -100, 4,    -100, -100, -100, -100, -100, -100, -100, 0,  //
                          -100, -100, -100, -100, -100, 1,    1,    1,    1,    1,    1,    -100}));
}

TEST(LibraryInstructions, RangeSelectKeepsPositionsBetweenBoundsAndReduces) {
  ProgramBuilder b;
  const int64_t f = 6;
  const int32_t x = b.hbm("x", DType::kFloat32, 2 * f, true);
  const int32_t bounds = b.hbm("bounds", DType::kFloat32, 2 * 2, true);
  const int32_t out = b.hbm("out", DType::kFloat32, 2 * f, false);
  const int32_t top = b.hbm("top", DType::kFloat32, 2, false);
  const AccessPattern data = load(b, x, 2, f, "data");
  const AccessPattern bound = load(b, bounds, 2, 2, "bound");
  AccessPattern low = bound, high = bound;
  low.dims[1].size = high.dims[1].size = 1;
  high.offset = 1;
  const int32_t kept = b.tile("kept", Memory::kSbuf, DType::kFloat32, 2, f);
  const int32_t best = b.tile("best", Memory::kSbuf, DType::kFloat32, 2, 1);
  Instruction& select = b.add(Opcode::kRangeSelect, b.ap(kept, {2, f}), {data, low, high});
  select.alu0 = AluOp::kIsGe;
  select.alu1 = AluOp::kIsLt;
  select.imm0 = 10.0f;  // positions 10..15
  select.imm1 = -7.0f;
  select.dst2 = b.ap(best, {2, 1});
  select.pattern[0] = static_cast<int64_t>(AluOp::kMax);
  b.add(Opcode::kDmaCopy, b.ap(out, {2, f}), {b.ap(kept, {2, f})});
  b.add(Opcode::kDmaCopy, b.ap(top, {2, 1}), {b.ap(best, {2, 1})});
  auto result = run_both(
      b, {{x, {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6}}, {bounds, {11, 14, 0, 100}}}, {out, top});
  EXPECT_EQ(result[out], (std::vector<float>{-7, 2, 3, 4, -7, -7, -1, -2, -3, -4, -5, -6}));
  EXPECT_EQ(result[top], (std::vector<float>{4, -1}));
}

TEST(LibraryInstructions, DmaComputeSumsScaledSourcesFromHbmAndSbuf) {
  ProgramBuilder b;
  const int32_t x = b.hbm("x", DType::kFloat32, 8, true);
  const int32_t y = b.hbm("y", DType::kFloat32, 8, true);
  const int32_t out = b.hbm("out", DType::kFloat32, 8, false);
  const AccessPattern tile = load(b, y, 2, 4, "tile");
  Instruction& sum = b.add(Opcode::kDmaCompute, b.ap(out, {8}), {b.ap(x, {8}), tile});
  sum.imm0 = 1.0f;
  sum.imm1 = 2.0f;
  auto result = run_both(b, {{x, {1, 2, 3, 4, 5, 6, 7, 8}}, {y, {1, 1, 1, 1, 0, 0, 0, -1}}}, {out});
  EXPECT_EQ(result[out], (std::vector<float>{3, 4, 5, 6, 5, 6, 7, 6}));
}

TEST(LibraryInstructions, DmaComputeChecksElementCounts) {
  ProgramBuilder b;
  const int32_t x = b.hbm("x", DType::kFloat32, 8, true);
  const int32_t out = b.hbm("out", DType::kFloat32, 8, false);
  b.add(Opcode::kDmaCompute, b.ap(out, {8}), {b.ap(x, {8}), b.ap(x, {4})});
  EXPECT_THROW(Simulator(b.program(), trn2()), SimError);
}

TEST(LibraryInstructions, RunPausesAfterEachCoreBarrierAndResumesOnTheSameCore) {
  ProgramBuilder b;
  const int32_t x = b.hbm("x", DType::kFloat32, 8, true);
  const int32_t out = b.hbm("out", DType::kFloat32, 8, false);
  const AccessPattern tile = load(b, x, 2, 4, "tile");
  b.add(Opcode::kCoreBarrier, AccessPattern{}, {});
  b.add(Opcode::kDmaCopy, b.ap(out, {2, 4}), {tile});
  Simulator simulator(b.program(), trn2());
  const std::vector<float> input = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> held(8);
  std::vector<float> written(8, 0.0f);
  std::memcpy(held.data(), input.data(), 32);
  simulator.bind(x, reinterpret_cast<uint8_t*>(held.data()));
  simulator.bind(out, reinterpret_cast<uint8_t*>(written.data()));
  EXPECT_FALSE(simulator.run());  // stopped at the barrier: the tile is loaded, out untouched
  EXPECT_EQ(written, std::vector<float>(8, 0.0f));
  EXPECT_TRUE(simulator.run());  // resumed: the tile it loaded is still there
  EXPECT_EQ(written, input);
  // The barrier costs nothing in the schedule.
  const Timeline timeline = simulator.timing();
  EXPECT_EQ(timeline.instructions[1].end_ns, timeline.instructions[1].start_ns);
}

}  // namespace
}  // namespace openneuron::sim
