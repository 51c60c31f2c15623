// Microscaling instructions (trn3): quantize_mx's scales, packing and scale layout, and
// nc_matmul_mx's product of two quantized tiles, on values whose quantized forms are exact.
#include "sim/mx.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/errors.h"
#include "sim/profile.h"
#include "sim/simulator.h"
#include "sim/tests/program_builder.h"

namespace openneuron::sim {
namespace {

using testing::ProgramBuilder;

constexpr int64_t kK = 32;  // four group rows of 8 partitions

struct MxProgram {
  ProgramBuilder b;
  int32_t lhs_in, rhs_in, out, lhs_packed_out, scales_out;
};

// lhs [32, 4] and rhs [32, 4] (bf16) quantized to e4m3 and multiplied: out [1, 1].
void build(MxProgram& p) {
  ProgramBuilder& b = p.b;
  p.lhs_in = b.hbm("lhs", DType::kBFloat16, kK * 4, true);
  p.rhs_in = b.hbm("rhs", DType::kBFloat16, kK * 4, true);
  p.out = b.hbm("out", DType::kFloat32, 1, false);
  p.lhs_packed_out = b.hbm("lhs_packed", DType::kFloat8E4M3x4, kK, false);
  p.scales_out = b.hbm("scales", DType::kUInt8, kK, false);
  std::vector<std::pair<int32_t, int32_t>> quantized;
  for (int32_t input : {p.lhs_in, p.rhs_in}) {
    const int32_t raw = b.tile("raw", Memory::kSbuf, DType::kBFloat16, kK, 4);
    b.add(Opcode::kDmaCopy, b.ap(raw, {kK, 4}), {b.ap(input, {kK, 4})});
    const int32_t packed = b.tile("packed", Memory::kSbuf, DType::kFloat8E4M3x4, kK, 1);
    const int32_t scales = b.tile("scales", Memory::kSbuf, DType::kUInt8, kK, 1);
    b.add(Opcode::kMemset, b.ap(scales, {kK, 1}), {});
    Instruction& quantize = b.add(Opcode::kQuantizeMx, b.ap(packed, {kK, 1}), {b.ap(raw, {kK, 4})});
    quantize.dst2 = b.ap(scales, {kK, 1});
    quantized.emplace_back(packed, scales);
  }
  const int32_t product = b.tile("product", Memory::kPsum, DType::kFloat32, 1, 1);
  b.add(Opcode::kMatmulMx, b.ap(product, {1, 1}),
        {b.ap(quantized[0].first, {kK, 1}), b.ap(quantized[1].first, {kK, 1}),
         b.ap(quantized[0].second, {kK, 1}), b.ap(quantized[1].second, {kK, 1})});
  const int32_t result = b.tile("result", Memory::kSbuf, DType::kFloat32, 1, 1);
  b.add(Opcode::kTensorCopy, b.ap(result, {1, 1}), {b.ap(product, {1, 1})});
  b.add(Opcode::kDmaCopy, b.ap(p.out, {1, 1}), {b.ap(result, {1, 1})});
  b.add(Opcode::kDmaCopy, b.ap(p.lhs_packed_out, {kK, 1}), {b.ap(quantized[0].first, {kK, 1})});
  b.add(Opcode::kDmaCopy, b.ap(p.scales_out, {kK, 1}), {b.ap(quantized[0].second, {kK, 1})});
}

TEST(Microscaling, QuantizeThenMultiplyIsExactOnRepresentableValues) {
  MxProgram p;
  build(p);
  Simulator simulator(p.b.program(), core_profile("trn3"));
  std::vector<float> lhs(kK * 4, 1.0f), rhs(kK * 4, 2.0f);
  lhs[0] = 3.0f;  // group row 0's largest exponent field: 128 (3.0); the others' 127 (1.0)
  testing::set_floats(simulator, p.lhs_in, lhs);
  testing::set_floats(simulator, p.rhs_in, rhs);
  simulator.run();
  // Sum over 32 partitions × 4 values of lhs · rhs: 127 · 2 + 3 · 2.
  EXPECT_EQ(testing::read_floats(simulator, p.out)[0], 260.0f);
  // Scales: largest exponent field less e4m3's largest exponent (8), group row g at
  // partition 32·(g/4) + g%4 = g here; the partitions between keep the memset's zeros.
  const auto scales = simulator.hbm(p.scales_out);
  EXPECT_EQ(scales[0], 128 - 8);
  for (int g = 1; g < 4; ++g) EXPECT_EQ(scales[mx_scale_partition(g)], 127 - 8) << g;
  for (int partition = 4; partition < kK; ++partition) EXPECT_EQ(scales[partition], 0);
  // Partition 0's four values 3, 1, 1, 1 divided by 2^(120 - 127): 384, 128, 128, 128 in e4m3.
  const auto packed = simulator.hbm(p.lhs_packed_out);
  EXPECT_EQ(load_element(DType::kFloat8E4M3, &packed[0]), 384.0f);
  for (int q = 1; q < 4; ++q) EXPECT_EQ(load_element(DType::kFloat8E4M3, &packed[q]), 128.0f);
}

TEST(Microscaling, NeedsNeuronCoreV4) {
  MxProgram p;
  build(p);
  try {
    Simulator simulator(p.b.program(), core_profile("trn2"));
    FAIL() << "expected a rule error";
  } catch (const SimError& error) {
    EXPECT_NE(std::string(error.what()).find("NeuronCore-v4"), std::string::npos);
  }
}

TEST(Microscaling, PackedValuesAreOpaqueToArithmetic) {
  ProgramBuilder b;
  const int32_t in = b.hbm("in", DType::kFloat8E4M3x4, 32, true);
  const int32_t packed = b.tile("packed", Memory::kSbuf, DType::kFloat8E4M3x4, 32, 1);
  b.add(Opcode::kDmaCopy, b.ap(packed, {32, 1}), {b.ap(in, {32, 1})});
  const int32_t wide = b.tile("wide", Memory::kSbuf, DType::kFloat32, 32, 1);
  Instruction& scale = b.add(Opcode::kTensorScalar, b.ap(wide, {32, 1}), {b.ap(packed, {32, 1})});
  scale.alu0 = AluOp::kMultiply;
  scale.imm0 = 2.0f;
  try {
    Simulator simulator(b.program(), core_profile("trn3"));
    FAIL() << "expected a rule error";
  } catch (const SimError& error) {
    EXPECT_EQ(error.rule, rule::kDtype);
  }
}

}  // namespace
}  // namespace openneuron::sim
