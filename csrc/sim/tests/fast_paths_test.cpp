// The fast executor's vector kernels against the reference interpreter, byte for byte: the
// blocked matmul under each ISA at shapes that leave row and column remainders, in-place
// transposes, and reductions over rows holding NaNs and signed zeros.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "sim/alu.h"
#include "sim/profile.h"
#include "sim/simulator.h"
#include "sim/tests/program_builder.h"
#include "sim/vector_isa.h"

namespace openneuron::sim {
namespace {

using testing::ProgramBuilder;
using testing::random_floats;

// The fast result of `output` (fp32), after checking the reference wrote the same. The fast
// executor runs first: a later run could find the earlier one's results in reused memory and
// hide an element it failed to write.
std::vector<uint8_t> run_both(ProgramBuilder& builder,
                              const std::map<int32_t, std::vector<float>>& inputs, int32_t output) {
  std::vector<uint8_t> bytes[2];
  for (bool reference : {false, true}) {
    Simulator simulator(builder.program(), core_profile("trn2"));
    for (const auto& [buffer, values] : inputs) testing::set_floats(simulator, buffer, values);
    simulator.run(reference);
    bytes[reference] = simulator.hbm(output);
  }
  // fp32 outputs: equal bits, except that any NaN equals any NaN (which NaN an operation on
  // two NaNs returns follows the operand order the compiler picks for a commutative add).
  EXPECT_EQ(bytes[0].size(), bytes[1].size());
  for (size_t i = 0; i + 4 <= bytes[0].size() && i + 4 <= bytes[1].size(); i += 4) {
    float fast, reference;
    std::memcpy(&fast, bytes[0].data() + i, 4);
    std::memcpy(&reference, bytes[1].data() + i, 4);
    if (std::isnan(fast) && std::isnan(reference)) continue;
    if (std::memcmp(bytes[0].data() + i, bytes[1].data() + i, 4) != 0) {
      ADD_FAILURE() << "fast executor differs from the reference at element " << i / 4 << ": "
                    << fast << " vs " << reference;
      break;
    }
  }
  return bytes[0];
}

AccessPattern load(ProgramBuilder& b, int32_t hbm, int64_t p, int64_t f, int64_t offset = 0) {
  const int32_t tile = b.tile("tile", Memory::kSbuf, DType::kFloat32, p, f);
  b.add(Opcode::kDmaCopy, b.ap(tile, {p, f}), {b.ap(hbm, {p, f}, offset)});
  return b.ap(tile, {p, f});
}

// out = lhsT[k, m]ᵀ · rhs[k, n] twice into one PSUM tile (the second accumulating).
void check_matmul(int64_t k, int64_t m, int64_t n) {
  ProgramBuilder b;
  const int32_t lhs = b.hbm("lhsT", DType::kFloat32, 2 * k * m, true);
  const int32_t rhs = b.hbm("rhs", DType::kFloat32, 2 * k * n, true);
  const int32_t out = b.hbm("out", DType::kFloat32, m * n, false);
  const int32_t acc = b.tile("acc", Memory::kPsum, DType::kFloat32, m, n);
  for (int step = 0; step < 2; ++step) {
    const auto a = load(b, lhs, k, m, step * k * m);
    const auto v = load(b, rhs, k, n, step * k * n);
    b.add(Opcode::kMatmul, b.ap(acc, {m, n}), {a, v}).accumulate = step == 1;
  }
  const int32_t result = b.tile("res", Memory::kSbuf, DType::kFloat32, m, n);
  b.add(Opcode::kTensorCopy, b.ap(result, {m, n}), {b.ap(acc, {m, n})});
  b.add(Opcode::kDmaCopy, b.ap(out, {m, n}), {b.ap(result, {m, n})});
  run_both(b, {{lhs, random_floats(2 * k * m, 7)}, {rhs, random_floats(2 * k * n, 8)}}, out);
}

TEST(FastPaths, BlockedMatmulEqualsTheReferenceOnEveryIsa) {
  const struct {
    int64_t k, m, n;
  } shapes[] = {{128, 128, 512}, {1, 1, 1}, {37, 13, 47}, {128, 127, 33}, {5, 9, 500}};
  for (bool avx2 : {false, true}) {
    force_avx2(avx2);
    SCOPED_TRACE(vector_isa_name());
    for (const auto& s : shapes) {
      SCOPED_TRACE("k=" + std::to_string(s.k) + " m=" + std::to_string(s.m) +
                   " n=" + std::to_string(s.n));
      check_matmul(s.k, s.m, s.n);
    }
  }
  force_avx2(false);
}

TEST(FastPaths, InPlaceTransposeEqualsTheReference) {
  for (const auto& [p, f] : {std::pair<int64_t, int64_t>{128, 128}, {13, 70}, {1, 9}}) {
    ProgramBuilder b;
    const int32_t in = b.hbm("in", DType::kFloat32, p * f, true);
    const int32_t out = b.hbm("out", DType::kFloat32, f * p, false);
    const auto tile = load(b, in, p, f);
    const int32_t t = b.tile("t", Memory::kPsum, DType::kFloat32, f, p);
    b.add(Opcode::kTranspose, b.ap(t, {f, p}), {tile});
    const int32_t s = b.tile("s", Memory::kSbuf, DType::kFloat32, f, p);
    b.add(Opcode::kTensorCopy, b.ap(s, {f, p}), {b.ap(t, {f, p})});
    b.add(Opcode::kDmaCopy, b.ap(out, {f, p}), {b.ap(s, {f, p})});
    const auto values = random_floats(p * f, 9);
    const auto bytes = run_both(b, {{in, values}}, out);
    float first;
    std::memcpy(&first, bytes.data() + 4 * (f > 1 ? p : 0), 4);  // out[1, 0] = in[0, 1]
    EXPECT_EQ(first, values[f > 1 ? 1 : 0]);
  }
}

// Rows of 200 (whole vectors and a tail): NaN early, NaN late, none; ±0 ties; max and min
// (the vector fold leaves NaN to a mask), add and multiply.
TEST(FastPaths, VectorReductionsKeepNanAndSignedZerosOfTheReference) {
  const int64_t p = 6, f = 200;
  auto values = random_floats(p * f, 11);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  values[0 * f + 3] = nan;     // a NaN in the first vector of row 0
  values[1 * f + 197] = nan;   // in the scalar tail of row 1
  values[2 * f + 100] = -nan;  // a negative NaN mid-row
  for (int64_t j = 0; j < f; ++j) values[3 * f + j] = (j % 3 == 0) ? 0.0f : -0.0f;
  for (int64_t j = 0; j < f; ++j) values[4 * f + j] = (j % 2 == 0) ? -0.0f : 0.0f;
  for (AluOp op : {AluOp::kMax, AluOp::kMin, AluOp::kAdd, AluOp::kMultiply}) {
    ProgramBuilder b;
    const int32_t x = b.hbm("x", DType::kFloat32, p * f, true);
    const int32_t out = b.hbm("out", DType::kFloat32, p, false);
    const auto tile = load(b, x, p, f);
    const int32_t r = b.tile("r", Memory::kSbuf, DType::kFloat32, p, 1);
    b.add(Opcode::kTensorReduce, b.ap(r, {p, 1}), {tile}).alu0 = op;
    b.add(Opcode::kDmaCopy, b.ap(out, {p, 1}), {b.ap(r, {p, 1})});
    SCOPED_TRACE(alu_op_name(op));
    const auto bytes = run_both(b, {{x, values}}, out);
    float row[6];
    std::memcpy(row, bytes.data(), sizeof(row));
    EXPECT_TRUE(std::isnan(row[0]) && std::isnan(row[1]) && std::isnan(row[2]));
    EXPECT_FALSE(std::isnan(row[5]));
  }
}

// A kernel-created tensor bound to the caller's memory: the bytes the kernel wrote are kept,
// the rest hold 0xFF (NaN) afterwards, on both executors, whatever the memory held before.
TEST(FastPaths, BoundOutputsHoldNanWhereNeverWritten) {
  ProgramBuilder b;
  const int64_t p = 4, f = 10;
  const int32_t in = b.hbm("in", DType::kFloat32, p * f, true);
  const int32_t out = b.hbm("out", DType::kFloat32, 3 * p * f, false);
  const auto tile = load(b, in, p, f);
  b.add(Opcode::kDmaCopy, b.ap(out, {p, f}, p * f), {tile});  // the middle third only
  const auto values = random_floats(p * f, 5);
  for (bool reference : {false, true}) {
    Simulator simulator(b.program(), core_profile("trn2"));
    testing::set_floats(simulator, in, values);
    std::vector<float> host(3 * p * f, 7.0f);
    simulator.bind(out, reinterpret_cast<uint8_t*>(host.data()));
    simulator.run(reference);
    for (int64_t i = 0; i < 3 * p * f; ++i) {
      uint32_t bits;
      std::memcpy(&bits, &host[i], 4);
      if (i >= p * f && i < 2 * p * f) {
        EXPECT_EQ(host[i], values[i - p * f]) << i;
      } else {
        EXPECT_EQ(bits, 0xFFFFFFFFu) << i;
      }
    }
  }
}

// Every activation function, with scale, bias and a sum, on each ISA: the fast executor's
// vector loops give the reference's bytes, special values included.
TEST(FastPaths, ActivationsEqualTheReferenceOnEveryIsa) {
  const int64_t p = 8, f = 150;
  auto values = random_floats(p * f, 13, -12.0f, 12.0f);
  const float specials[] = {0.0f,
                            -0.0f,
                            1e-40f,
                            -1e-40f,
                            88.7f,
                            89.0f,
                            -103.0f,
                            -110.0f,
                            1e30f,
                            -1e30f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            2.2e7f,  // · 0.75 on either side of 2^24, where sin and cos
                            2.3e7f,  // change to libm's
                            -2.3e7f};
  for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]); ++i) values[i * 7] = specials[i];
  for (bool avx2 : {false, true}) {
    force_avx2(avx2);
    SCOPED_TRACE(vector_isa_name());
    for (int fn = 0; fn < static_cast<int>(ActivationFunction::kCount); ++fn) {
      const auto function = static_cast<ActivationFunction>(fn);
      SCOPED_TRACE(activation_name(function));
      ProgramBuilder b;
      const int32_t x = b.hbm("x", DType::kFloat32, p * f, true);
      const int32_t out = b.hbm("out", DType::kFloat32, p * f + p, false);
      const auto tile = load(b, x, p, f);
      const int32_t y = b.tile("y", Memory::kSbuf, DType::kFloat32, p, f);
      const int32_t sum = b.tile("sum", Memory::kSbuf, DType::kFloat32, p, 1);
      Instruction& act = b.add(Opcode::kActivation, b.ap(y, {p, f}), {tile});
      act.function = function;
      act.imm0 = 0.75f;
      act.imm1 = 0.125f;
      act.alu1 = AluOp::kAdd;
      act.dst2 = b.ap(sum, {p, 1});
      b.add(Opcode::kDmaCopy, b.ap(out, {p, f}), {b.ap(y, {p, f})});
      b.add(Opcode::kDmaCopy, b.ap(out, {p, 1}, p * f), {b.ap(sum, {p, 1})});
      run_both(b, {{x, values}}, out);
    }
    // In place (the destination is the source), where sin and cos revisit their inputs.
    for (auto function :
         {ActivationFunction::kSin, ActivationFunction::kCos, ActivationFunction::kTanh}) {
      SCOPED_TRACE(activation_name(function));
      ProgramBuilder b;
      const int32_t x = b.hbm("x", DType::kFloat32, p * f, true);
      const int32_t out = b.hbm("out", DType::kFloat32, p * f, false);
      const auto tile = load(b, x, p, f);
      Instruction& act = b.add(Opcode::kActivation, tile, {tile});
      act.function = function;
      act.imm0 = 0.75f;
      act.imm1 = 0.125f;
      b.add(Opcode::kDmaCopy, b.ap(out, {p, f}), {tile});
      run_both(b, {{x, values}}, out);
    }
  }
  force_avx2(false);
}

// Streamed tensor_scalar over wide tiles: per-partition scalars, both operations, reversed
// operands, in place and into another tile (fp32 and bf16), on each ISA.
TEST(FastPaths, StreamedTensorScalarEqualsTheReferenceOnEveryIsa) {
  const int64_t p = 16, f = 1100;  // more than one chunk per partition
  for (bool avx2 : {false, true}) {
    force_avx2(avx2);
    SCOPED_TRACE(vector_isa_name());
    for (bool in_place : {false, true}) {
      for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
        if (in_place && dtype != DType::kFloat32) continue;
        ProgramBuilder b;
        const int32_t x = b.hbm("x", DType::kFloat32, p * f, true);
        const int32_t c = b.hbm("c", DType::kFloat32, p, true);
        const int32_t out = b.hbm("out", DType::kFloat32, p * f, false);
        const auto tile = load(b, x, p, f);
        const auto scalars = load(b, c, p, 1);
        const int32_t y = b.tile("y", Memory::kSbuf, dtype, p, f);
        const AccessPattern dst = in_place ? tile : b.ap(y, {p, f});
        Instruction& first = b.add(Opcode::kTensorScalar, dst, {tile, scalars});
        first.alu0 = AluOp::kSubtract;  // c - x, then (c - x) / 3
        first.reverse0 = true;
        first.alu1 = AluOp::kDivide;
        first.imm1 = 3.0f;
        Instruction& second = b.add(Opcode::kTensorScalar, dst, {dst});
        second.alu0 = AluOp::kMax;  // max(v, 0.5) alone
        second.imm0 = 0.5f;
        const int32_t back = b.tile("back", Memory::kSbuf, DType::kFloat32, p, f);
        b.add(Opcode::kTensorCopy, b.ap(back, {p, f}), {dst});
        b.add(Opcode::kDmaCopy, b.ap(out, {p, f}), {b.ap(back, {p, f})});
        run_both(b, {{x, random_floats(p * f, 21)}, {c, random_floats(p, 22)}}, out);
      }
    }
  }
  force_avx2(false);
}

// Single-column ([P, 1]) operands take a gather-compute-scatter path: columns inside wider
// tiles, partition offsets, bf16 and casts, per-partition scalars, reversed operands and a
// destination that is also a source, all as the reference computes them.
TEST(FastPaths, SingleColumnInstructionsEqualTheReference) {
  ProgramBuilder b;
  const int64_t p = 64, f = 8;
  const int32_t x = b.hbm("x", DType::kFloat32, p * f, true);
  const int32_t out = b.hbm("out", DType::kFloat32, p * f, false);
  const auto wide = load(b, x, p, f);  // [64, 8] fp32
  const int32_t narrow = b.tile("narrow", Memory::kSbuf, DType::kBFloat16, p, 2);
  const auto column = [&](int32_t buffer, int64_t offset, int64_t partitions = 64,
                          int32_t start = 0) {
    return b.ap(buffer, {partitions, 1}, offset, start);
  };
  b.add(Opcode::kTensorCopy, column(narrow, 0), {column(wide.buffer, 5)});  // fp32 -> bf16
  Instruction& add = b.add(Opcode::kTensorTensor, column(narrow, 1),
                           {column(narrow, 0), column(wide.buffer, 2)});  // bf16 + fp32
  add.alu0 = AluOp::kSubtract;
  Instruction& scale = b.add(Opcode::kTensorScalar, column(wide.buffer, 0),
                             {column(wide.buffer, 0), column(narrow, 1), column(wide.buffer, 7)});
  scale.alu0 = AluOp::kDivide;  // x0 = narrow1 / x0 (reversed), then x0 = x7 - x0 (reversed)
  scale.reverse0 = true;
  scale.alu1 = AluOp::kSubtract;
  scale.reverse1 = true;
  Instruction& half = b.add(Opcode::kTensorScalar, column(wide.buffer, 3, 32, 32),
                            {column(wide.buffer, 4, 32, 32)});  // partitions 32..63 only
  half.alu0 = AluOp::kMax;
  half.imm0 = 0.25f;
  half.alu1 = AluOp::kMultiply;
  half.imm1 = -3.0f;
  b.add(Opcode::kTensorCopy, column(wide.buffer, 6), {column(narrow, 1)});       // bf16 -> fp32
  b.add(Opcode::kTensorCopy, column(wide.buffer, 1), {column(wide.buffer, 0)});  // same dtype
  b.add(Opcode::kDmaCopy, b.ap(out, {p, f}), {wide});
  run_both(b, {{x, random_floats(p * f, 17)}}, out);
}

// Copies and fp32 tensor_tensor over uniform runs (a run per partition or per HBM row): row
// blocks of a wider HBM tensor in and out, column blocks of a tile, a partition range, short
// runs (32-byte moves) and long ones.
TEST(FastPaths, UniformRunCopiesAndAddsEqualTheReference) {
  for (int64_t width : {int64_t{5}, int64_t{16}, int64_t{200}}) {
    SCOPED_TRACE("width " + std::to_string(width));
    ProgramBuilder b;
    const int64_t p = 32, stride = 3 * width;
    const int32_t x = b.hbm("x", DType::kFloat32, p * stride, true);
    const int32_t out = b.hbm("out", DType::kFloat32, p * stride, false);
    const int32_t t = b.tile("t", Memory::kSbuf, DType::kFloat32, p, 2 * width);
    // Rows r, columns [width, 2·width) of x: strided HBM rows into the tile's right half.
    AccessPattern rows = b.ap(x, {p, width}, width);
    rows.dims[0].stride = stride;
    AccessPattern right = b.ap(t, {p, width}, width);
    right.dims[0].stride = 1;
    b.add(Opcode::kDmaCopy, right, {rows});
    rows.offset = 0;
    AccessPattern left = right;
    left.offset = 0;
    b.add(Opcode::kDmaCopy, left, {rows});
    AccessPattern low_left = left, low_right = right;  // partitions 0..15 only
    low_left.dims[0].size = low_right.dims[0].size = 16;
    Instruction& sub = b.add(Opcode::kTensorTensor, low_left, {low_right, low_left});
    sub.alu0 = AluOp::kSubtract;
    b.add(Opcode::kTensorTensor, right, {left, right}).alu0 = AluOp::kMax;
    AccessPattern back = rows;
    back.buffer = out;
    b.add(Opcode::kDmaCopy, back, {left});
    back.offset = 2 * width;
    b.add(Opcode::kDmaCopy, back, {right});
    back.offset = width;
    b.add(Opcode::kDmaCopy, back, {left});
    run_both(b, {{x, random_floats(p * stride, 19)}}, out);
  }
}

}  // namespace
}  // namespace openneuron::sim

namespace openneuron::sim {
namespace {

// Operand pairs that meet every branch of the vector ALU: at every third element, each pair of
// NaNs of both signs, signed zeros (max and min of equal operands pick the second), infinities,
// subnormals and equal values; random values elsewhere. x is values[0, n), y values[n, 2n).
std::vector<float> special_pairs(int64_t n, uint32_t seed) {
  auto values = random_floats(2 * n, seed);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {nan, -nan, 0.0f, -0.0f, inf, -inf, 1e-40f, -1e-40f, 1.0f, 2.0f};
  for (int64_t i = 0; i < n; i += 3) {
    const int64_t k = i / 3;
    values[i] = specials[k % 10];
    values[n + i] = specials[(k / 10) % 10];
  }
  return values;
}

// tensor_tensor with every vectorised operation, on each ISA, on dense fp32 tiles (a run per
// partition, 67 wide: whole vectors and a tail) and through the chunked path (a bf16 operand),
// into a fresh tile and over its own first operand.
TEST(FastPaths, VectorAluEqualsTheReferenceOnEveryIsa) {
  const int64_t p = 5, f = 67;  // 335 elements: all 100 special pairs
  for (bool avx2 : {false, true}) {
    force_avx2(avx2);
    SCOPED_TRACE(vector_isa_name());
    for (AluOp op : {AluOp::kAdd, AluOp::kSubtract, AluOp::kMultiply, AluOp::kDivide, AluOp::kMax,
                     AluOp::kMin}) {
      SCOPED_TRACE(alu_op_name(op));
      ProgramBuilder b;
      const int32_t x = b.hbm("x", DType::kFloat32, 2 * p * f, true);
      const int32_t out = b.hbm("out", DType::kFloat32, 3 * p * f, false);
      const auto left = load(b, x, p, f);
      const auto right = load(b, x, p, f, p * f);
      const int32_t narrow = b.tile("narrow", Memory::kSbuf, DType::kBFloat16, p, f);
      b.add(Opcode::kTensorCopy, b.ap(narrow, {p, f}), {right});
      const int32_t r = b.tile("r", Memory::kSbuf, DType::kFloat32, p, f);
      const int32_t s = b.tile("s", Memory::kSbuf, DType::kFloat32, p, f);
      b.add(Opcode::kTensorTensor, b.ap(r, {p, f}), {left, right}).alu0 = op;
      b.add(Opcode::kTensorTensor, b.ap(s, {p, f}), {b.ap(narrow, {p, f}), left}).alu0 = op;
      b.add(Opcode::kTensorTensor, left, {left, right}).alu0 = op;
      b.add(Opcode::kDmaCopy, b.ap(out, {p, f}), {b.ap(r, {p, f})});
      b.add(Opcode::kDmaCopy, b.ap(out, {p, f}, p * f), {b.ap(s, {p, f})});
      b.add(Opcode::kDmaCopy, b.ap(out, {p, f}, 2 * p * f), {left});
      const auto values = special_pairs(p * f, 23);
      const auto bytes = run_both(b, {{x, values}}, out);
      float first;
      std::memcpy(&first, bytes.data() + 4, 4);  // element 1: two ordinary values
      EXPECT_EQ(first, apply_alu(op, values[1], values[p * f + 1]));
    }
  }
  force_avx2(false);
}

// Whole-row reductions of dense fp32 tiles go four rows at a time: row counts that leave
// single rows (1, 6, 9), rows with a scalar tail (203 = 25 vectors + 3), NaNs and signed zeros,
// through tensor_reduce (negated too) and an activation's fused reduction, on each ISA.
TEST(FastPaths, RowBlockReductionsEqualTheReference) {
  const int64_t f = 203;
  for (bool avx2 : {false, true}) {
    force_avx2(avx2);
    SCOPED_TRACE(vector_isa_name());
    for (int64_t p : {int64_t{1}, int64_t{6}, int64_t{9}}) {
      for (AluOp op : {AluOp::kAdd, AluOp::kSubtract, AluOp::kMultiply, AluOp::kMax, AluOp::kMin}) {
        SCOPED_TRACE(std::string(alu_op_name(op)) + " rows " + std::to_string(p));
        ProgramBuilder b;
        const int32_t x = b.hbm("x", DType::kFloat32, p * f, true);
        const int32_t out = b.hbm("out", DType::kFloat32, 2 * p, false);
        const auto tile = load(b, x, p, f);
        const int32_t r = b.tile("r", Memory::kSbuf, DType::kFloat32, p, 1);
        Instruction& reduce = b.add(Opcode::kTensorReduce, b.ap(r, {p, 1}), {tile});
        reduce.alu0 = op;
        reduce.negate = p == 6;
        const int32_t y = b.tile("y", Memory::kSbuf, DType::kFloat32, p, f);
        const int32_t sum = b.tile("sum", Memory::kSbuf, DType::kFloat32, p, 1);
        Instruction& act = b.add(Opcode::kActivation, b.ap(y, {p, f}), {tile});
        act.function = ActivationFunction::kCopy;
        act.imm0 = 1.0f;
        act.alu1 = op;
        act.dst2 = b.ap(sum, {p, 1});
        b.add(Opcode::kDmaCopy, b.ap(out, {p, 1}), {b.ap(r, {p, 1})});
        b.add(Opcode::kDmaCopy, b.ap(out, {p, 1}, p), {b.ap(sum, {p, 1})});
        auto values = random_floats(p * f, 29, 0.5f, 1.5f);  // products stay finite
        const float nan = std::numeric_limits<float>::quiet_NaN();
        if (p > 1) values[1 * f + 201] = nan;  // in row 1's tail
        if (p > 4) values[4 * f + 17] = -nan;  // a single row after a block of four
        for (int64_t j = 0; j < f; ++j) values[j] = (j % 3 == 0) ? 0.0f : -0.0f;  // row 0
        const auto bytes = run_both(b, {{x, values}}, out);
        float row0;
        std::memcpy(&row0, bytes.data(), 4);
        EXPECT_EQ(row0, 0.0f);
      }
    }
  }
  force_avx2(false);
}

}  // namespace
}  // namespace openneuron::sim
