// nc_n_gather (a gather inside each partition, GpSimd) and tensor_copy_predicated (a copy of the
// elements a predicate selects, Vector): their results, bits, written-state, rules and cost.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "sim/errors.h"
#include "sim/profile.h"
#include "sim/simulator.h"
#include "sim/tests/program_builder.h"
#include "sim/timing.h"

namespace openneuron::sim {
namespace {

using testing::ProgramBuilder;

const CoreProfile& trn2() { return core_profile("trn2"); }

// A [p, f] SBUF tile of `dtype` loaded from a new HBM input.
AccessPattern staged(ProgramBuilder& b, const char* name, DType dtype, int64_t p, int64_t f,
                     int32_t* hbm) {
  *hbm = b.hbm(name, dtype, p * f, true);
  const int32_t tile = b.tile(name, Memory::kSbuf, dtype, p, f);
  b.add(Opcode::kDmaCopy, b.ap(tile, {p, f}), {b.ap(*hbm, {p, f})});
  return b.ap(tile, {p, f});
}

template <typename T>
void set_raw(Simulator& simulator, int32_t buffer, const std::vector<T>& values) {
  simulator.set_input(buffer, values.data(), values.size() * sizeof(T));
}

template <typename T>
std::vector<T> get_raw(const Simulator& simulator, int32_t buffer) {
  const auto bytes = simulator.hbm(buffer);
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

// Gathers from a [2, 2, 3] int32 tile (free axes flattened to 6) with [2, 4] indices; the
// values need all 32 bits, so a gather through fp32 would round them.
TEST(GatherPredicatedCopy, NGatherIndexesTheFlattenedFreeAxesOfEachPartitionBitExactly) {
  for (bool reference : {true, false}) {
    ProgramBuilder b;
    int32_t data_in = 0, index_in = 0;
    AccessPattern data = staged(b, "data", DType::kInt32, 2, 6, &data_in);
    data.rank = 3;  // [2, 2, 3] over the same bytes
    data.dims[1] = {2, 3};
    data.dims[2] = {3, 1};
    const AccessPattern index = staged(b, "index", DType::kUInt32, 2, 4, &index_in);
    const int32_t picked = b.tile("picked", Memory::kSbuf, DType::kInt32, 2, 4);
    b.add(Opcode::kNGather, b.ap(picked, {2, 4}), {data, index});
    const int32_t out = b.hbm("out", DType::kInt32, 8, false);
    b.add(Opcode::kDmaCopy, b.ap(out, {2, 4}), {b.ap(picked, {2, 4})});
    Simulator simulator(b.program(), trn2());
    const int32_t big = (1 << 24) + 1;
    set_raw<int32_t>(simulator, data_in, {10, 11, 12, 13, 14, big, -20, -21, -22, -23, -24, -big});
    set_raw<uint32_t>(simulator, index_in, {5, 0, 0, 3, 1, 5, 2, 4});
    ASSERT_TRUE(simulator.run(reference));
    EXPECT_EQ(get_raw<int32_t>(simulator, out),
              (std::vector<int32_t>{big, 10, 10, 13, -21, -big, -22, -24}));
  }
}

TEST(GatherPredicatedCopy, NGatherIndexPastThePartitionIsOutOfBounds) {
  ProgramBuilder b;
  int32_t data_in = 0, index_in = 0;
  const AccessPattern data = staged(b, "data", DType::kFloat32, 1, 4, &data_in);
  const AccessPattern index = staged(b, "index", DType::kUInt32, 1, 2, &index_in);
  const int32_t picked = b.tile("picked", Memory::kSbuf, DType::kFloat32, 1, 2);
  b.add(Opcode::kNGather, b.ap(picked, {1, 2}), {data, index});
  Simulator simulator(b.program(), trn2());
  set_raw<float>(simulator, data_in, {1, 2, 3, 4});
  set_raw<uint32_t>(simulator, index_in, {3, 4});
  try {
    simulator.run();
    FAIL() << "index 4 of 4 elements was accepted";
  } catch (const SimError& error) {
    EXPECT_EQ(error.rule, rule::kOutOfBounds);
  }
}

TEST(GatherPredicatedCopy, NGatherRulesIndexDtypeDstDtypeAndShape) {
  auto refused = [](DType index_dtype, DType dst_dtype, int64_t dst_free) {
    ProgramBuilder b;
    const int32_t data = b.tile("data", Memory::kSbuf, DType::kFloat32, 4, 8);
    const int32_t index = b.tile("index", Memory::kSbuf, index_dtype, 4, 3);
    const int32_t dst = b.tile("dst", Memory::kSbuf, dst_dtype, 4, dst_free);
    b.add(Opcode::kNGather, b.ap(dst, {4, dst_free}), {b.ap(data, {4, 8}), b.ap(index, {4, 3})});
    try {
      Simulator simulator(b.program(), trn2());
    } catch (const SimError& error) {
      return std::string(error.rule);
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refused(DType::kUInt32, DType::kFloat32, 3), "accepted");
  EXPECT_EQ(refused(DType::kInt32, DType::kFloat32, 3), rule::kDtype);
  EXPECT_EQ(refused(DType::kUInt32, DType::kBFloat16, 3), rule::kDtype);
  EXPECT_EQ(refused(DType::kUInt32, DType::kFloat32, 4), rule::kShapeMismatch);
}

// dst starts as 100..107; the uint8 predicate selects elements 1, 2, 6 (any nonzero value).
std::vector<float> predicated(bool reverse, bool scalar, bool reference) {
  ProgramBuilder b;
  int32_t dst_in = 0, src_in = 0, predicate_in = 0;
  const AccessPattern dst = staged(b, "dst", DType::kFloat32, 2, 4, &dst_in);
  const AccessPattern src = staged(b, "src", DType::kFloat32, 2, 4, &src_in);
  const AccessPattern predicate = staged(b, "predicate", DType::kUInt8, 2, 4, &predicate_in);
  Instruction& copy = scalar
                          ? b.add(Opcode::kTensorCopyPredicated, dst, {AccessPattern{}, predicate})
                          : b.add(Opcode::kTensorCopyPredicated, dst, {src, predicate});
  copy.reverse0 = reverse;
  copy.imm0 = -1.5f;
  const int32_t out = b.hbm("out", DType::kFloat32, 8, false);
  b.add(Opcode::kDmaCopy, b.ap(out, {2, 4}), {dst});
  Simulator simulator(b.program(), trn2());
  set_raw<float>(simulator, dst_in, {100, 101, 102, 103, 104, 105, 106, 107});
  set_raw<float>(simulator, src_in, {0, 1, 2, 3, 4, 5, 6, 7});
  set_raw<uint8_t>(simulator, predicate_in, {0, 1, 255, 0, 0, 0, 2, 0});
  EXPECT_TRUE(simulator.run(reference));
  return testing::read_floats(simulator, out);
}

TEST(GatherPredicatedCopy, CopyPredicatedChangesOnlySelectedElements) {
  for (bool reference : {true, false}) {
    EXPECT_EQ(predicated(false, false, reference),
              (std::vector<float>{100, 1, 2, 103, 104, 105, 6, 107}));
    EXPECT_EQ(predicated(true, false, reference),
              (std::vector<float>{0, 101, 102, 3, 4, 5, 106, 7}));
    EXPECT_EQ(predicated(false, true, reference),
              (std::vector<float>{100, -1.5f, -1.5f, 103, 104, 105, -1.5f, 107}));
  }
}

// Into a never-written tile: the unselected elements stay never written, so storing the whole
// tile is an uninitialized read, and storing the selected one is not.
TEST(GatherPredicatedCopy, CopyPredicatedLeavesUnselectedElementsNeverWritten) {
  for (int64_t stored : {1, 2}) {
    ProgramBuilder b;
    int32_t src_in = 0, predicate_in = 0;
    const AccessPattern src = staged(b, "src", DType::kFloat32, 1, 2, &src_in);
    const AccessPattern predicate = staged(b, "predicate", DType::kUInt32, 1, 2, &predicate_in);
    const int32_t dst = b.tile("dst", Memory::kSbuf, DType::kFloat32, 1, 2);
    b.add(Opcode::kTensorCopyPredicated, b.ap(dst, {1, 2}), {src, predicate});
    const int32_t out = b.hbm("out", DType::kFloat32, stored, false);
    b.add(Opcode::kDmaCopy, b.ap(out, {1, stored}), {b.ap(dst, {1, stored})});
    Simulator simulator(b.program(), trn2());
    set_raw<float>(simulator, src_in, {7, 8});
    set_raw<uint32_t>(simulator, predicate_in, {1, 0});
    if (stored == 1) {
      EXPECT_TRUE(simulator.run());
      EXPECT_EQ(testing::read_floats(simulator, out), std::vector<float>{7});
    } else {
      try {
        simulator.run();
        FAIL() << "the unselected element was read as if written";
      } catch (const SimError& error) {
        EXPECT_EQ(error.rule, rule::kUninitializedRead);
      }
    }
  }
}

TEST(GatherPredicatedCopy, CopyPredicatedRulesAndPublishedCost) {
  auto build = [](DType predicate_dtype, DType src_dtype, Memory predicate_memory) {
    ProgramBuilder b;
    const int32_t dst = b.tile("dst", Memory::kSbuf, DType::kFloat32, 4, 64);
    const int32_t src = b.tile("src", Memory::kSbuf, src_dtype, 4, 64);
    const int32_t predicate = b.tile("predicate", predicate_memory, predicate_dtype, 4, 64);
    b.add(Opcode::kTensorCopyPredicated, b.ap(dst, {4, 64}),
          {b.ap(src, {4, 64}), b.ap(predicate, {4, 64})});
    return b;
  };
  auto rule_of = [](ProgramBuilder b) {
    try {
      Simulator simulator(b.program(), trn2());
    } catch (const SimError& error) {
      return std::string(error.rule);
    }
    return std::string("accepted");
  };
  EXPECT_EQ(rule_of(build(DType::kUInt16, DType::kFloat32, Memory::kSbuf)), "accepted");
  EXPECT_EQ(rule_of(build(DType::kFloat32, DType::kFloat32, Memory::kSbuf)), rule::kDtype);
  EXPECT_EQ(rule_of(build(DType::kUInt8, DType::kBFloat16, Memory::kSbuf)), rule::kDtype);
  // max(MIN_II, 2N) cycles with both inputs in SBUF, max(MIN_II, N) with one in PSUM.
  const CoreProfile& profile = trn2();
  auto cost = [&](Memory where) {
    ProgramBuilder b = build(DType::kUInt8, DType::kFloat32, where);
    return instruction_cost_ns(b.program(), b.program().instructions[0], profile);
  };
  EXPECT_GT(cost(Memory::kSbuf), cost(Memory::kPsum));
}

}  // namespace
}  // namespace openneuron::sim
