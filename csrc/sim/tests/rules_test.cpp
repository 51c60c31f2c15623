// Every rule violation raises a SimError that names its rule and the instruction's line.
#include <gtest/gtest.h>

#include <functional>

#include "sim/errors.h"
#include "sim/simulator.h"
#include "sim/tests/program_builder.h"

namespace openneuron::sim {
namespace {

using testing::ProgramBuilder;

// Builds a program with `body`, expects construction to fail with `rule_name` at `line`.
// By default the violation is the last instruction's.
void expect_rule(const char* rule_name, const std::function<void(ProgramBuilder&)>& body,
                 int32_t expected_line = -1) {
  ProgramBuilder b;
  body(b);
  const int32_t line = expected_line >= 0 ? expected_line : b.program().instructions.back().line;
  try {
    Simulator simulator(b.program(), core_profile("trn2"));
    FAIL() << "expected rule " << rule_name;
  } catch (const SimError& error) {
    EXPECT_EQ(error.rule, rule_name) << error.what();
    EXPECT_EQ(error.line, line) << error.what();
    EXPECT_NE(std::string(error.what()).find(std::string("[") + rule_name + "]"),
              std::string::npos);
    EXPECT_NE(std::string(error.what()).find("kernel.py:"), std::string::npos);
  }
}

TEST(Rules, PartitionLimit) {
  expect_rule(rule::kPartitionLimit, [](ProgramBuilder& b) {
    const int32_t t = b.tile("big", Memory::kSbuf, DType::kFloat32, 256, 4);
    b.add(Opcode::kMemset, b.ap(t, {256, 4}), {});
  });
}

TEST(Rules, PartitionAlignment) {
  expect_rule(rule::kPartitionAlignment, [](ProgramBuilder& b) {
    const int32_t t = b.tile("t", Memory::kSbuf, DType::kFloat32, 128, 4);
    b.add(Opcode::kMemset, b.ap(t, {64, 4}, 0, 32), {});  // 64 partitions from 32
  });
  expect_rule(rule::kPartitionAlignment, [](ProgramBuilder& b) {
    const int32_t t = b.tile("t", Memory::kSbuf, DType::kFloat32, 128, 4);
    b.add(Opcode::kMemset, b.ap(t, {16, 4}, 0, 8), {});
  });
}

TEST(Rules, AlignedPartitionOffsetsAreAccepted) {
  ProgramBuilder b;
  const int32_t t = b.tile("t", Memory::kSbuf, DType::kFloat32, 128, 4);
  b.add(Opcode::kMemset, b.ap(t, {64, 4}, 0, 64), {});
  b.add(Opcode::kMemset, b.ap(t, {32, 4}, 0, 96), {});
  EXPECT_NO_THROW(Simulator(b.program(), core_profile("trn2")));
}

TEST(Rules, DmaMayWriteAnyStartPartition) {
  ProgramBuilder b;
  const int32_t in = b.hbm("in", DType::kFloat32, 4, true);
  const int32_t t = b.tile("t", Memory::kSbuf, DType::kFloat32, 128, 4);
  b.add(Opcode::kDmaCopy, b.ap(t, {1, 4}, 0, 1), {b.ap(in, {1, 4})});
  EXPECT_NO_THROW(Simulator(b.program(), core_profile("trn2")));
}

TEST(Rules, PartitionStride) {
  expect_rule(rule::kPartitionStride, [](ProgramBuilder& b) {
    const int32_t t = b.tile("t", Memory::kSbuf, DType::kFloat32, 128, 4);
    AccessPattern ap = b.ap(t, {64, 4});
    ap.dims[0].stride = 2;
    b.add(Opcode::kMemset, ap, {});
  });
}

TEST(Rules, OutOfBoundsAndShapes) {
  expect_rule(rule::kOutOfBounds, [](ProgramBuilder& b) {
    const int32_t t = b.tile("t", Memory::kSbuf, DType::kFloat32, 8, 4);
    b.add(Opcode::kMemset, b.ap(t, {8, 8}), {});
  });
  expect_rule(rule::kShapeMismatch, [](ProgramBuilder& b) {
    const int32_t t = b.tile("t", Memory::kSbuf, DType::kFloat32, 8, 4);
    const int32_t u = b.tile("u", Memory::kSbuf, DType::kFloat32, 8, 8);
    b.add(Opcode::kTensorTensor, b.ap(t, {8, 4}), {b.ap(t, {8, 4}), b.ap(u, {8, 8})});
  });
}

TEST(Rules, MatmulLimits) {
  expect_rule(rule::kMatmulLimits, [](ProgramBuilder& b) {
    const int32_t s = b.tile("s", Memory::kSbuf, DType::kBFloat16, 128, 128);
    const int32_t m = b.tile("m", Memory::kSbuf, DType::kBFloat16, 128, 1024);
    const int32_t r = b.tile("r", Memory::kPsum, DType::kFloat32, 128, 512);
    b.add(Opcode::kMatmul, b.ap(r, {128, 512}), {b.ap(s, {128, 128}), b.ap(m, {128, 1024})});
  });
  expect_rule(rule::kMatmulLimits, [](ProgramBuilder& b) {
    const int32_t s = b.tile("s", Memory::kSbuf, DType::kBFloat16, 128, 128);
    const int32_t m = b.tile("m", Memory::kSbuf, DType::kBFloat16, 64, 256);
    const int32_t r = b.tile("r", Memory::kPsum, DType::kFloat32, 128, 256);
    b.add(Opcode::kMatmul, b.ap(r, {128, 256}), {b.ap(s, {128, 128}), b.ap(m, {64, 256})});
  });
}

TEST(Rules, MatmulPlacement) {
  expect_rule(rule::kMatmulPlacement, [](ProgramBuilder& b) {
    const int32_t s = b.tile("s", Memory::kSbuf, DType::kBFloat16, 128, 128);
    const int32_t r = b.tile("r", Memory::kSbuf, DType::kFloat32, 128, 128);
    b.add(Opcode::kMatmul, b.ap(r, {128, 128}), {b.ap(s, {128, 128}), b.ap(s, {128, 128})});
  });
}

TEST(Rules, PsumBank) {
  expect_rule(rule::kPsumBank, [](ProgramBuilder& b) {
    const int32_t s = b.tile("s", Memory::kSbuf, DType::kBFloat16, 128, 128);
    const int32_t m = b.tile("m", Memory::kSbuf, DType::kBFloat16, 128, 512);
    const int32_t r = b.tile("r", Memory::kPsum, DType::kFloat32, 128, 1024);
    // 512 fp32 starting at element 256 straddle two banks.
    b.add(Opcode::kMatmul, b.ap(r, {128, 512}, 256), {b.ap(s, {128, 128}), b.ap(m, {128, 512})});
  });
}

TEST(Rules, SbufCapacityPerProfile) {
  // 120 KiB + 120 KiB live at once: too much for trn2's 224 KiB, fits trn3's 256 KiB.
  auto body = [](ProgramBuilder& b) {
    const int32_t x = b.tile("x", Memory::kSbuf, DType::kFloat32, 128, 30 * 1024);
    const int32_t y = b.tile("y", Memory::kSbuf, DType::kFloat32, 128, 30 * 1024);
    b.add(Opcode::kMemset, b.ap(x, {128, 30 * 1024}), {});
    b.add(Opcode::kMemset, b.ap(y, {128, 30 * 1024}), {});
    b.add(Opcode::kTensorTensor, b.ap(x, {128, 30 * 1024}),
          {b.ap(x, {128, 30 * 1024}), b.ap(y, {128, 30 * 1024})});
  };
  try {
    ProgramBuilder b;
    body(b);
    Simulator simulator(b.program(), core_profile("trn2"));
    FAIL() << "expected sbuf-capacity";
  } catch (const SimError& error) {
    EXPECT_EQ(error.rule, rule::kSbufCapacity);
    EXPECT_NE(std::string(error.what()).find("'y'"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("'x'"), std::string::npos);  // what is live
  }
  ProgramBuilder b;
  body(b);
  EXPECT_NO_THROW(Simulator(b.program(), core_profile("trn3")));
}

TEST(Rules, BuffersWhoseLivesDoNotOverlapShareMemory) {
  ProgramBuilder b;
  for (int i = 0; i < 4; ++i) {
    const int32_t x = b.tile("x", Memory::kSbuf, DType::kFloat32, 128, 30 * 1024);
    b.add(Opcode::kMemset, b.ap(x, {128, 30 * 1024}), {});
  }
  EXPECT_NO_THROW(Simulator(b.program(), core_profile("trn2")));
}

// Next-fit placement scatters small long-lived tiles around SBUF (each lands after the
// short-lived one before it); a tile wider than the gaps left still fits once they are packed.
TEST(Rules, TilesThatFitPackedAreNotRefusedForNextFitGaps) {
  ProgramBuilder b;
  std::vector<int32_t> small_tiles;
  for (int i = 0; i < 55; ++i) {
    small_tiles.push_back(b.tile("small", Memory::kSbuf, DType::kFloat32, 128, 16));
    b.add(Opcode::kMemset, b.ap(small_tiles.back(), {128, 16}), {});
    const int32_t passing = b.tile("passing", Memory::kSbuf, DType::kFloat32, 128, 1024);
    b.add(Opcode::kMemset, b.ap(passing, {128, 1024}), {});
  }
  const int32_t wide = b.tile("wide", Memory::kSbuf, DType::kFloat32, 128, 2048);
  b.add(Opcode::kMemset, b.ap(wide, {128, 2048}), {});
  for (int32_t tile : small_tiles) b.add(Opcode::kMemset, b.ap(tile, {128, 16}), {});
  EXPECT_NO_THROW(Simulator(b.program(), core_profile("trn2")));
}

TEST(Rules, PsumCapacityIsEightBanks) {
  expect_rule(
      rule::kPsumCapacity,
      [](ProgramBuilder& b) {
        std::vector<int32_t> tiles;
        for (int i = 0; i < 9; ++i) {
          tiles.push_back(
              b.tile("acc" + std::to_string(i), Memory::kPsum, DType::kFloat32, 128, 16));
          b.add(Opcode::kMemset, b.ap(tiles.back(), {128, 16}), {});
        }
        const int32_t out = b.tile("out", Memory::kSbuf, DType::kFloat32, 128, 16);
        for (int32_t t : tiles)
          b.add(Opcode::kTensorCopy, b.ap(out, {128, 16}), {b.ap(t, {128, 16})});
      },
      /*the ninth tile's first use*/ 18);
}

TEST(Rules, Dtypes) {
  expect_rule(rule::kDtype, [](ProgramBuilder& b) {
    const int32_t s = b.tile("s", Memory::kSbuf, DType::kFloat32, 128, 128);
    const int32_t m = b.tile("m", Memory::kSbuf, DType::kBFloat16, 128, 128);
    const int32_t r = b.tile("r", Memory::kPsum, DType::kFloat32, 128, 128);
    b.add(Opcode::kMatmul, b.ap(r, {128, 128}), {b.ap(s, {128, 128}), b.ap(m, {128, 128})});
  });
  expect_rule(rule::kDtype, [](ProgramBuilder& b) {
    const int32_t x = b.tile("x", Memory::kSbuf, DType::kFloat32, 8, 8);
    b.add(Opcode::kTensorTensor, b.ap(x, {8, 8}), {b.ap(x, {8, 8}), b.ap(x, {8, 8})}).alu0 =
        AluOp::kBitwiseAnd;
  });
}

TEST(Rules, EngineAccess) {
  expect_rule(rule::kPsumAccess, [](ProgramBuilder& b) {  // DMA from PSUM
    const int32_t out = b.hbm("out", DType::kFloat32, 64, false);
    const int32_t p = b.tile("p", Memory::kPsum, DType::kFloat32, 8, 8);
    b.add(Opcode::kDmaCopy, b.ap(out, {8, 8}), {b.ap(p, {8, 8})});
  });
  expect_rule(rule::kPsumAccess, [](ProgramBuilder& b) {  // GpSimd into PSUM
    const int32_t p = b.tile("p", Memory::kPsum, DType::kFloat32, 8, 8);
    b.add(Opcode::kIota, b.ap(p, {8, 8}), {});
  });
  expect_rule(rule::kPsumBothInputs, [](ProgramBuilder& b) {
    const int32_t p = b.tile("p", Memory::kPsum, DType::kFloat32, 8, 8);
    const int32_t q = b.tile("q", Memory::kPsum, DType::kFloat32, 8, 8);
    const int32_t r = b.tile("r", Memory::kSbuf, DType::kFloat32, 8, 8);
    b.add(Opcode::kTensorTensor, b.ap(r, {8, 8}), {b.ap(p, {8, 8}), b.ap(q, {8, 8})});
  });
  expect_rule(rule::kHbmAccess, [](ProgramBuilder& b) {
    const int32_t in = b.hbm("in", DType::kFloat32, 64, true);
    const int32_t r = b.tile("r", Memory::kSbuf, DType::kFloat32, 8, 8);
    b.add(Opcode::kActivation, b.ap(r, {8, 8}), {b.ap(in, {8, 8})});
  });
}

TEST(Rules, FreeAxisReductionOnly) {
  expect_rule(rule::kBadOperand, [](ProgramBuilder& b) {
    const int32_t x = b.tile("x", Memory::kSbuf, DType::kFloat32, 8, 8);
    const int32_t r = b.tile("r", Memory::kSbuf, DType::kFloat32, 1, 1);
    b.add(Opcode::kTensorReduce, b.ap(r, {1, 1}), {b.ap(x, {8, 8})}).reduce_dims = 2;
  });
}

}  // namespace
}  // namespace openneuron::sim
