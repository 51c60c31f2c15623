// Each instruction's semantics: the fast executor equals the reference interpreter bit for bit,
// and both equal an independent computation of what isa.h says.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "sim/errors.h"
#include "sim/profile.h"
#include "sim/simulator.h"
#include "sim/tests/program_builder.h"

namespace openneuron::sim {
namespace {

using testing::ProgramBuilder;
using testing::random_floats;

const CoreProfile& trn2() { return core_profile("trn2"); }

// Runs the program on both executors with the same inputs; returns the fast result of `output`
// after checking the reference produced identical bytes.
std::vector<float> run_both(ProgramBuilder& builder,
                            const std::map<int32_t, std::vector<float>>& inputs, int32_t output) {
  std::vector<uint8_t> reference_bytes;
  std::vector<float> result;
  for (bool reference : {true, false}) {
    Simulator simulator(builder.program(), trn2());
    for (const auto& [buffer, values] : inputs) testing::set_floats(simulator, buffer, values);
    simulator.run(reference);
    if (reference) {
      reference_bytes = simulator.hbm(output);
    } else {
      EXPECT_EQ(simulator.hbm(output), reference_bytes) << "fast executor differs from reference";
      result = testing::read_floats(simulator, output);
    }
  }
  return result;
}

// in (HBM [p, f]) -> SBUF tile.
AccessPattern load(ProgramBuilder& b, int32_t hbm, DType dtype, int64_t p, int64_t f,
                   const std::string& name = "tile") {
  const int32_t tile = b.tile(name, Memory::kSbuf, dtype, p, f);
  b.add(Opcode::kDmaCopy, b.ap(tile, {p, f}), {b.ap(hbm, {p, f})});
  return b.ap(tile, {p, f});
}

void store(ProgramBuilder& b, int32_t hbm, const AccessPattern& tile, int64_t p, int64_t f) {
  b.add(Opcode::kDmaCopy, b.ap(hbm, {p, f}), {tile});
}

TEST(Instructions, MatmulAccumulatesInFp32) {
  for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    ProgramBuilder b;
    const int64_t k = 96, m = 64, n = 200;
    const int32_t lhs = b.hbm("lhsT", dtype, 2 * k * m, true);
    const int32_t rhs = b.hbm("rhs", dtype, 2 * k * n, true);
    const int32_t out = b.hbm("out", DType::kFloat32, m * n, false);
    const int32_t acc = b.tile("acc", Memory::kPsum, DType::kFloat32, m, n);
    for (int step = 0; step < 2; ++step) {
      const int32_t s = b.tile("s", Memory::kSbuf, dtype, k, m);
      const int32_t mv = b.tile("m", Memory::kSbuf, dtype, k, n);
      b.add(Opcode::kDmaCopy, b.ap(s, {k, m}), {b.ap(lhs, {k, m}, step * k * m)});
      b.add(Opcode::kDmaCopy, b.ap(mv, {k, n}), {b.ap(rhs, {k, n}, step * k * n)});
      b.add(Opcode::kMatmul, b.ap(acc, {m, n}), {b.ap(s, {k, m}), b.ap(mv, {k, n})}).accumulate =
          step == 1;
    }
    const int32_t result = b.tile("res", Memory::kSbuf, DType::kFloat32, m, n);
    b.add(Opcode::kTensorCopy, b.ap(result, {m, n}), {b.ap(acc, {m, n})});
    store(b, out, b.ap(result, {m, n}), m, n);
    auto lhs_values = random_floats(2 * k * m, 1);
    auto rhs_values = random_floats(2 * k * n, 2);
    for (auto& v : lhs_values) v = round_to(dtype, v);
    for (auto& v : rhs_values) v = round_to(dtype, v);
    const auto got = run_both(b, {{lhs, lhs_values}, {rhs, rhs_values}}, out);
    double worst = 0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double expected = 0;
        for (int step = 0; step < 2; ++step) {
          for (int64_t kk = 0; kk < k; ++kk) {
            expected += static_cast<double>(lhs_values[step * k * m + kk * m + i]) *
                        rhs_values[step * k * n + kk * n + j];
          }
        }
        worst = std::max(worst, std::fabs(expected - got[i * n + j]));
      }
    }
    EXPECT_LT(worst, 1e-4) << dtype_name(dtype);  // fp32 accumulation of 192 products of |x|<4
  }
}

TEST(Instructions, TransposeOnTensorEngine) {
  ProgramBuilder b;
  const int32_t in = b.hbm("in", DType::kFloat32, 40 * 24, true);
  const int32_t out = b.hbm("out", DType::kFloat32, 24 * 40, false);
  const auto tile = load(b, in, DType::kFloat32, 40, 24);
  const int32_t t = b.tile("t", Memory::kPsum, DType::kFloat32, 24, 40);
  b.add(Opcode::kTranspose, b.ap(t, {24, 40}), {tile});
  const int32_t s = b.tile("s", Memory::kSbuf, DType::kFloat32, 24, 40);
  b.add(Opcode::kTensorCopy, b.ap(s, {24, 40}), {b.ap(t, {24, 40})}).engine = Engine::kScalar;
  store(b, out, b.ap(s, {24, 40}), 24, 40);
  const auto values = random_floats(40 * 24, 3);
  const auto got = run_both(b, {{in, values}}, out);
  for (int i = 0; i < 40; ++i) {
    for (int j = 0; j < 24; ++j) EXPECT_EQ(got[j * 40 + i], values[i * 24 + j]);
  }
}

TEST(Instructions, TensorTensorAluOps) {
  const auto x = random_floats(32 * 16, 4, -3, 3);
  const auto y = random_floats(32 * 16, 5, 0.5f, 3);
  const std::vector<std::pair<AluOp, std::function<float(float, float)>>> cases = {
      {AluOp::kAdd, [](float a, float c) { return a + c; }},
      {AluOp::kSubtract, [](float a, float c) { return a - c; }},
      {AluOp::kMultiply, [](float a, float c) { return a * c; }},
      {AluOp::kDivide, [](float a, float c) { return a / c; }},
      {AluOp::kMax, [](float a, float c) { return std::max(a, c); }},
      {AluOp::kMin, [](float a, float c) { return std::min(a, c); }},
      {AluOp::kIsGt, [](float a, float c) { return a > c ? 1.0f : 0.0f; }},
      {AluOp::kAbsMax, [](float a, float c) { return std::max(std::fabs(a), std::fabs(c)); }},
  };
  for (const auto& [op, reference] : cases) {
    ProgramBuilder b;
    const int32_t in0 = b.hbm("x", DType::kFloat32, 32 * 16, true);
    const int32_t in1 = b.hbm("y", DType::kFloat32, 32 * 16, true);
    const int32_t out = b.hbm("out", DType::kBFloat16, 32 * 16, false);
    const auto t0 = load(b, in0, DType::kFloat32, 32, 16, "x");
    const auto t1 = load(b, in1, DType::kFloat32, 32, 16, "y");
    const int32_t r = b.tile("r", Memory::kSbuf, DType::kBFloat16, 32, 16);
    b.add(Opcode::kTensorTensor, b.ap(r, {32, 16}), {t0, t1}).alu0 = op;
    store(b, out, b.ap(r, {32, 16}), 32, 16);
    const auto got = run_both(b, {{in0, x}, {in1, y}}, out);
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], round_to(DType::kBFloat16, reference(x[i], y[i]))) << alu_op_name(op);
    }
  }
}

TEST(Instructions, TensorScalarPerPartitionOperandAndReverse) {
  ProgramBuilder b;
  const int32_t in = b.hbm("x", DType::kFloat32, 8 * 10, true);
  const int32_t scalars = b.hbm("s", DType::kFloat32, 8, true);
  const int32_t out = b.hbm("out", DType::kFloat32, 8 * 10, false);
  const auto x = load(b, in, DType::kFloat32, 8, 10);
  const auto s = load(b, scalars, DType::kFloat32, 8, 1, "s");
  const int32_t r = b.tile("r", Memory::kSbuf, DType::kFloat32, 8, 10);
  // (s[p] - x) * 0.5
  Instruction& ins = b.add(Opcode::kTensorScalar, b.ap(r, {8, 10}), {x, s});
  ins.alu0 = AluOp::kSubtract;
  ins.reverse0 = true;
  ins.alu1 = AluOp::kMultiply;
  ins.imm1 = 0.5f;
  store(b, out, b.ap(r, {8, 10}), 8, 10);
  const auto xs = random_floats(80, 6);
  const auto ss = random_floats(8, 7);
  const auto got = run_both(b, {{in, xs}, {scalars, ss}}, out);
  for (int p = 0; p < 8; ++p) {
    for (int f = 0; f < 10; ++f) EXPECT_EQ(got[p * 10 + f], (ss[p] - xs[p * 10 + f]) * 0.5f);
  }
}

TEST(Instructions, TensorReduceOverTrailingFreeDims) {
  ProgramBuilder b;
  const int32_t in = b.hbm("x", DType::kFloat32, 16 * 4 * 6, true);
  const int32_t out = b.hbm("out", DType::kFloat32, 16 * 4, false);
  const int32_t tile = b.tile("x", Memory::kSbuf, DType::kFloat32, 16, 24);
  b.add(Opcode::kDmaCopy, b.ap(tile, {16, 24}), {b.ap(in, {16, 24})});
  const int32_t r = b.tile("r", Memory::kSbuf, DType::kFloat32, 16, 4);
  Instruction& ins = b.add(Opcode::kTensorReduce, b.ap(r, {16, 4}), {b.ap(tile, {16, 4, 6})});
  ins.alu0 = AluOp::kMax;
  ins.reduce_dims = 1;
  store(b, out, b.ap(r, {16, 4}), 16, 4);
  const auto xs = random_floats(16 * 24, 8);
  const auto got = run_both(b, {{in, xs}}, out);
  for (int g = 0; g < 64; ++g) {
    float expected = xs[g * 6];
    for (int j = 1; j < 6; ++j) expected = std::max(expected, xs[g * 6 + j]);
    EXPECT_EQ(got[g], expected);
  }
}

TEST(Instructions, ActivationWithScaleBiasAndReduce) {
  ProgramBuilder b;
  const int32_t in = b.hbm("x", DType::kFloat32, 4 * 50, true);
  const int32_t bias_in = b.hbm("bias", DType::kFloat32, 4, true);
  const int32_t out = b.hbm("out", DType::kFloat32, 4 * 50, false);
  const int32_t sums = b.hbm("sums", DType::kFloat32, 4, false);
  const auto x = load(b, in, DType::kFloat32, 4, 50);
  const auto bias = load(b, bias_in, DType::kFloat32, 4, 1, "bias");
  const int32_t r = b.tile("r", Memory::kSbuf, DType::kFloat32, 4, 50);
  const int32_t s = b.tile("s", Memory::kSbuf, DType::kFloat32, 4, 1);
  Instruction& ins = b.add(Opcode::kActivation, b.ap(r, {4, 50}), {x, bias});
  ins.function = ActivationFunction::kExp;
  ins.imm0 = 0.5f;
  ins.alu1 = AluOp::kAdd;
  ins.dst2 = b.ap(s, {4, 1});
  store(b, out, b.ap(r, {4, 50}), 4, 50);
  store(b, sums, b.ap(s, {4, 1}), 4, 1);
  const auto xs = random_floats(200, 9);
  const auto bs = random_floats(4, 10);
  const auto got = run_both(b, {{in, xs}, {bias_in, bs}}, out);
  Simulator simulator(b.program(), trn2());
  testing::set_floats(simulator, in, xs);
  testing::set_floats(simulator, bias_in, bs);
  simulator.run();
  const auto got_sums = testing::read_floats(simulator, sums);
  for (int p = 0; p < 4; ++p) {
    double total = 0;
    for (int f = 0; f < 50; ++f) {
      const double expected = std::exp(0.5 * xs[p * 50 + f] + bs[p]);
      EXPECT_NEAR(got[p * 50 + f], expected, 1e-6 * expected);
      total += expected;
    }
    EXPECT_NEAR(got_sums[p], total, 1e-5 * total);
  }
}

// tensor_scalar_reduce: one kTensorScalar whose alu1 reduces each row into dst2 (the second
// operator is not applied then).
TEST(Instructions, TensorScalarWithRowReduction) {
  ProgramBuilder b;
  const int32_t in = b.hbm("x", DType::kFloat32, 4 * 40, true);
  const int32_t out = b.hbm("out", DType::kFloat32, 4 * 40, false);
  const int32_t maxima = b.hbm("maxima", DType::kFloat32, 4, false);
  const auto x = load(b, in, DType::kFloat32, 4, 40);
  const int32_t r = b.tile("r", Memory::kSbuf, DType::kFloat32, 4, 40);
  const int32_t m = b.tile("m", Memory::kSbuf, DType::kFloat32, 4, 1);
  Instruction& ins = b.add(Opcode::kTensorScalar, b.ap(r, {4, 40}), {x});
  ins.alu0 = AluOp::kMultiply;
  ins.imm0 = -3.0f;
  ins.alu1 = AluOp::kMax;
  ins.dst2 = b.ap(m, {4, 1});
  store(b, out, b.ap(r, {4, 40}), 4, 40);
  store(b, maxima, b.ap(m, {4, 1}), 4, 1);
  const auto xs = random_floats(160, 12);
  const auto got = run_both(b, {{in, xs}}, out);
  Simulator simulator(b.program(), trn2());
  testing::set_floats(simulator, in, xs);
  simulator.run();
  const auto got_maxima = testing::read_floats(simulator, maxima);
  for (int p = 0; p < 4; ++p) {
    float largest = -INFINITY;
    for (int f = 0; f < 40; ++f) {
      const float expected = xs[p * 40 + f] * -3.0f;
      EXPECT_EQ(got[p * 40 + f], expected);
      largest = std::max(largest, expected);
    }
    EXPECT_EQ(got_maxima[p], largest);
  }
}

TEST(Instructions, SelectScanAndStatistics) {
  ProgramBuilder b;
  const int64_t p = 8, f = 64;
  const int32_t in = b.hbm("x", DType::kFloat32, p * f, true);
  const int32_t scan_out = b.hbm("scan", DType::kFloat32, p * f, false);
  const int32_t select_out = b.hbm("select", DType::kFloat32, p * f, false);
  const int32_t stats_out = b.hbm("stats", DType::kFloat32, p * 2, false);
  const auto x = load(b, in, DType::kFloat32, p, f);
  const int32_t ones = b.tile("ones", Memory::kSbuf, DType::kFloat32, p, f);
  b.add(Opcode::kMemset, b.ap(ones, {p, f}), {}).imm0 = 1.0f;
  const int32_t zeros = b.tile("zeros", Memory::kSbuf, DType::kFloat32, p, f);
  b.add(Opcode::kMemset, b.ap(zeros, {p, f}), {}).imm0 = 0.0f;
  // cumulative sum: r = (r * 1) + x
  const int32_t scan = b.tile("scan", Memory::kSbuf, DType::kFloat32, p, f);
  Instruction& s = b.add(Opcode::kTensorTensorScan, b.ap(scan, {p, f}), {b.ap(ones, {p, f}), x});
  s.alu0 = AluOp::kMultiply;
  s.alu1 = AluOp::kAdd;
  store(b, scan_out, b.ap(scan, {p, f}), p, f);
  // relu via select(x > 0 mask, x, 0)
  const int32_t mask = b.tile("mask", Memory::kSbuf, DType::kUInt8, p, f);
  Instruction& m = b.add(Opcode::kTensorScalar, b.ap(mask, {p, f}), {x});
  m.alu0 = AluOp::kIsGt;
  const int32_t selected = b.tile("sel", Memory::kSbuf, DType::kFloat32, p, f);
  b.add(Opcode::kSelect, b.ap(selected, {p, f}), {b.ap(mask, {p, f}), x, b.ap(zeros, {p, f})});
  store(b, select_out, b.ap(selected, {p, f}), p, f);
  // mean / variance
  const int32_t stats = b.tile("stats", Memory::kSbuf, DType::kFloat32, p, 12);
  b.add(Opcode::kBnStats, b.ap(stats, {p, 6}), {b.ap(x.buffer, {p, 32})});
  b.add(Opcode::kBnStats, b.ap(stats, {p, 6}, 6), {b.ap(x.buffer, {p, 32}, 32)});
  const int32_t aggregated = b.tile("aggr", Memory::kSbuf, DType::kFloat32, p, 2);
  b.add(Opcode::kBnAggr, b.ap(aggregated, {p, 2}), {b.ap(stats, {p, 12})});
  store(b, stats_out, b.ap(aggregated, {p, 2}), p, 2);
  const auto xs = random_floats(p * f, 11);
  const auto scanned = run_both(b, {{in, xs}}, scan_out);
  const auto relu = run_both(b, {{in, xs}}, select_out);
  const auto moments = run_both(b, {{in, xs}}, stats_out);
  for (int64_t i = 0; i < p; ++i) {
    double total = 0, sum = 0, squares = 0;
    for (int64_t j = 0; j < f; ++j) {
      total += xs[i * f + j];
      EXPECT_NEAR(scanned[i * f + j], total, 1e-5);
      EXPECT_EQ(relu[i * f + j], std::max(0.0f, xs[i * f + j]));
      sum += xs[i * f + j];
      squares += double(xs[i * f + j]) * xs[i * f + j];
    }
    const double mean = sum / f;
    EXPECT_NEAR(moments[i * 2], mean, 1e-6);
    EXPECT_NEAR(moments[i * 2 + 1], squares / f - mean * mean, 1e-5);
  }
}

TEST(Instructions, IotaAffineSelectAndPartitionReduce) {
  ProgramBuilder b;
  const int64_t p = 16, f = 16;
  const int32_t iota_out = b.hbm("iota", DType::kInt32, p * f, false);
  const int32_t masked_out = b.hbm("masked", DType::kFloat32, p * f, false);
  const int32_t reduced_out = b.hbm("reduced", DType::kFloat32, f, false);
  const int32_t iota = b.tile("iota", Memory::kSbuf, DType::kInt32, p, f);
  Instruction& i = b.add(Opcode::kIota, b.ap(iota, {p, f}), {});
  i.imm0 = 3;
  i.imm1 = 100;
  i.pattern[0] = 2;
  store(b, iota_out, b.ap(iota, {p, f}), p, f);
  const int32_t ones = b.tile("ones", Memory::kSbuf, DType::kFloat32, p, f);
  b.add(Opcode::kMemset, b.ap(ones, {p, f}), {}).imm0 = 1.0f;
  // causal mask: keep where p - j >= 0, else -inf-like
  const int32_t masked = b.tile("masked", Memory::kSbuf, DType::kFloat32, p, f);
  Instruction& a = b.add(Opcode::kAffineSelect, b.ap(masked, {p, f}), {b.ap(ones, {p, f})});
  a.imm1 = 1;
  a.pattern[0] = -1;
  a.alu0 = AluOp::kIsGe;
  a.imm2 = -30000.0f;
  store(b, masked_out, b.ap(masked, {p, f}), p, f);
  const int32_t reduced = b.tile("reduced", Memory::kSbuf, DType::kFloat32, 1, f);
  b.add(Opcode::kPartitionReduce, b.ap(reduced, {1, f}), {b.ap(masked, {p, f})}).alu0 = AluOp::kMax;
  store(b, reduced_out, b.ap(reduced, {1, f}), 1, f);
  const auto iotas = run_both(b, {}, iota_out);
  const auto mask = run_both(b, {}, masked_out);
  const auto column_max = run_both(b, {}, reduced_out);
  for (int64_t r = 0; r < p; ++r) {
    for (int64_t c = 0; c < f; ++c) {
      EXPECT_EQ(iotas[r * f + c], 3 + 100 * r + 2 * c);
      EXPECT_EQ(mask[r * f + c], r >= c ? 1.0f : -30000.0f);
    }
  }
  for (int64_t c = 0; c < f; ++c) EXPECT_EQ(column_max[c], 1.0f);
}

TEST(Instructions, DmaCastsAndWalksAccessPatterns) {
  // Load a [6, 4] HBM matrix transposed into SBUF [4, 6] as bfloat16, store back as fp32.
  ProgramBuilder b;
  const int32_t in = b.hbm("x", DType::kFloat32, 24, true);
  const int32_t out = b.hbm("out", DType::kFloat32, 24, false);
  const int32_t tile = b.tile("t", Memory::kSbuf, DType::kBFloat16, 4, 6);
  AccessPattern transposed = b.ap(in, {4, 6});
  transposed.dims[0].stride = 1;
  transposed.dims[1].stride = 4;
  b.add(Opcode::kDmaCopy, b.ap(tile, {4, 6}), {transposed});
  store(b, out, b.ap(tile, {4, 6}), 4, 6);
  const auto xs = random_floats(24, 12);
  const auto got = run_both(b, {{in, xs}}, out);
  for (int r = 0; r < 6; ++r) {
    for (int c = 0; c < 4; ++c)
      EXPECT_EQ(got[c * 6 + r], round_to(DType::kBFloat16, xs[r * 4 + c]));
  }
}

// Storing never-written elements is an error; arithmetic on them is not (the hardware computes
// on whatever bytes are there), but its results stay never written, so storing those is.
TEST(Instructions, NewBuffersArePoisonedAndUnwrittenReadsAreErrors) {
  for (bool reference : {true, false}) {
    for (const Opcode reader : {Opcode::kTensorScalar, Opcode::kDmaCopy}) {
      ProgramBuilder b;
      const int32_t out = b.hbm("out", DType::kFloat32, 8 * 8, false);
      const int32_t tile = b.tile("never_written", Memory::kSbuf, DType::kFloat32, 8, 8);
      const int32_t r = b.tile("r", Memory::kSbuf, DType::kFloat32, 8, 8);
      b.add(Opcode::kMemset, b.ap(tile, {8, 4}), {});  // only half of it
      if (reader == Opcode::kDmaCopy) {
        b.add(Opcode::kDmaCopy, b.ap(out, {8, 8}), {b.ap(tile, {8, 8})});  // to HBM
      } else {
        b.add(Opcode::kTensorScalar, b.ap(r, {8, 8}), {b.ap(tile, {8, 8})});  // arithmetic
        store(b, out, b.ap(r, {8, 8}), 8, 8);
      }
      Simulator simulator(b.program(), trn2());
      try {
        simulator.run(reference);
        FAIL() << "expected an uninitialized-read error";
      } catch (const SimError& error) {
        const bool computed = reader == Opcode::kTensorScalar;
        EXPECT_EQ(error.rule, rule::kUninitializedRead);
        EXPECT_EQ(error.line, computed ? 12 : 11);  // the store
        EXPECT_NE(std::string(error.what()).find(computed ? "'r'" : "never_written"),
                  std::string::npos);
      }
    }
  }
}

// Results that depend only on written elements stay usable: a matmul whose moving operand
// has never-written columns gives never-written result columns (the store of the others
// passes, of all fails); an elementwise op on a half-written tile likewise.
TEST(Instructions, ComputingOnUnwrittenElementsLeavesOnlyTheirDependentsUnwritten) {
  for (bool reference : {true, false}) {
    for (const bool store_all : {false, true}) {
      ProgramBuilder b;
      const int32_t in = b.hbm("x", DType::kFloat32, 8 * 8, true);
      const int32_t out = b.hbm("out", DType::kFloat32, 8 * 8, false);
      const auto x = load(b, in, DType::kFloat32, 8, 8);
      const int32_t moving = b.tile("moving", Memory::kSbuf, DType::kFloat32, 8, 8);
      b.add(Opcode::kTensorCopy, b.ap(moving, {8, 5}), {b.ap(x.buffer, {8, 5})});  // cols 0-4
      const int32_t acc = b.tile("acc", Memory::kPsum, DType::kFloat32, 8, 8);
      b.add(Opcode::kMatmul, b.ap(acc, {8, 8}), {x, b.ap(moving, {8, 8})});
      const int32_t doubled = b.tile("doubled", Memory::kSbuf, DType::kFloat32, 8, 8);
      Instruction& twice = b.add(Opcode::kTensorScalar, b.ap(doubled, {8, 8}), {b.ap(acc, {8, 8})});
      twice.alu0 = AluOp::kMultiply;
      twice.imm0 = 2.0f;
      AccessPattern stored = b.ap(doubled, {8, store_all ? 8 : 5});
      AccessPattern target = b.ap(out, {8, store_all ? 8 : 5});
      target.dims[0].stride = 8;
      b.add(Opcode::kDmaCopy, target, {stored});
      Simulator simulator(b.program(), trn2());
      testing::set_floats(simulator, in, random_floats(64, 21));
      if (store_all) {
        EXPECT_THROW(simulator.run(reference), SimError);
      } else {
        EXPECT_NO_THROW(simulator.run(reference));
      }
    }
  }
}

// A transpose or tensor copy moves never-written elements along (the hardware moves whatever
// bits are there); they stay never written where they land, so only a later read of those
// elements is an error, and reads of the written ones are not.
TEST(Instructions, TransposesAndCopiesCarryUnwrittenElementsAlong) {
  for (bool reference : {true, false}) {
    for (const Opcode mover : {Opcode::kTranspose, Opcode::kTensorCopy}) {
      for (const bool read_unwritten : {false, true}) {
        ProgramBuilder b;
        const int32_t in = b.hbm("in", DType::kFloat32, 8 * 4, true);
        const int32_t out = b.hbm("out", DType::kFloat32, 8 * 4, false);
        const int32_t half_tile = b.tile("half", Memory::kSbuf, DType::kFloat32, 8, 8);
        b.add(Opcode::kDmaCopy, b.ap(half_tile, {8, 4}), {b.ap(in, {8, 4})});  // columns 0..3
        const AccessPattern half = b.ap(half_tile, {8, 8});
        const Memory where = mover == Opcode::kTranspose ? Memory::kPsum : Memory::kSbuf;
        const int32_t moved = b.tile("moved", where, DType::kFloat32, 8, 8);
        b.add(mover, b.ap(moved, {8, 8}), {half});
        // The transpose's partitions 0..3 are the written columns of `half`, 4..7 never
        // written ones; the copy's partitions hold columns 0..3 written, 4..7 not.
        AccessPattern source = b.ap(moved, {mover == Opcode::kTranspose ? 4 : 8, 4});
        if (read_unwritten) {
          if (mover == Opcode::kTranspose) {
            source.dims[0].size = 8;
          } else {
            source.offset = 4;
          }
        }
        const int64_t rows = source.dims[0].size;
        const int32_t row = b.tile("row", Memory::kSbuf, DType::kFloat32, 8, 4);
        b.add(Opcode::kTensorCopy, b.ap(row, {rows, 4}), {source});
        b.add(Opcode::kDmaCopy, b.ap(out, {rows, 4}), {b.ap(row, {rows, 4})});
        Simulator simulator(b.program(), trn2());
        testing::set_floats(simulator, in, random_floats(32, 41));
        if (!read_unwritten) {
          EXPECT_NO_THROW(simulator.run(reference)) << opcode_name(mover);
          continue;
        }
        try {
          simulator.run(reference);
          ADD_FAILURE() << "expected an uninitialized-read error " << opcode_name(mover);
        } catch (const SimError& error) {
          EXPECT_EQ(error.rule, rule::kUninitializedRead) << error.what();
          EXPECT_NE(std::string(error.what()).find("'row'"), std::string::npos) << error.what();
        }
      }
    }
  }
}

TEST(Instructions, AccumulateIntoUnwrittenPsumIsAnError) {
  ProgramBuilder b;
  const int32_t in = b.hbm("x", DType::kBFloat16, 128 * 128, true);
  const int32_t out = b.hbm("out", DType::kFloat32, 128 * 128, false);
  const auto x = load(b, in, DType::kBFloat16, 128, 128);
  const int32_t acc = b.tile("acc", Memory::kPsum, DType::kFloat32, 128, 128);
  b.add(Opcode::kMatmul, b.ap(acc, {128, 128}), {x, x}).accumulate = true;
  const int32_t result = b.tile("result", Memory::kSbuf, DType::kFloat32, 128, 128);
  b.add(Opcode::kTensorCopy, b.ap(result, {128, 128}), {b.ap(acc, {128, 128})});
  store(b, out, b.ap(result, {128, 128}), 128, 128);  // the sum of garbage reaches HBM
  Simulator simulator(b.program(), trn2());
  testing::set_floats(simulator, in, random_floats(128 * 128, 13));
  EXPECT_THROW(simulator.run(), SimError);
}

}  // namespace
}  // namespace openneuron::sim

namespace openneuron::sim {
namespace {

// The streaming paths of the fast executor (strided views, dtype casts, runs longer than one
// chunk, an overlapping in-buffer copy) against the reference interpreter, byte for byte.
TEST(Instructions, StreamingPathsEqualTheReference) {
  ProgramBuilder b;
  const int64_t p = 64, f = 3000;  // 3000 elements per partition: several chunks
  const int32_t x = b.hbm("x", DType::kFloat32, p * f, true);
  const int32_t y = b.hbm("y", DType::kBFloat16, p * f, true);
  const int32_t out = b.hbm("out", DType::kBFloat16, p * f, false);
  const auto tx = load(b, x, DType::kFloat32, p, f, "tx");
  const auto ty = load(b, y, DType::kBFloat16, p, f, "ty");
  const int32_t sum = b.tile("sum", Memory::kSbuf, DType::kBFloat16, p, f);
  b.add(Opcode::kTensorTensor, b.ap(sum, {p, f}), {tx, ty}).alu0 = AluOp::kMax;
  // Every other element, scaled: a strided destination and source.
  AccessPattern even = b.ap(sum, {p, f / 2});
  even.dims[1].stride = 2;
  AccessPattern odd = even;
  odd.offset = 1;
  Instruction& scale = b.add(Opcode::kTensorScalar, even, {odd});
  scale.alu0 = AluOp::kMultiply;
  scale.imm0 = 3.0f;
  scale.alu1 = AluOp::kSubtract;
  scale.reverse1 = true;
  scale.imm1 = 0.5f;
  // Shift right by one element inside the same tile: overlapping, so read-all-first.
  AccessPattern head = b.ap(sum, {p, f - 1});
  AccessPattern tail = head;
  tail.offset = 1;
  b.add(Opcode::kTensorCopy, tail, {head});
  Instruction& act = b.add(Opcode::kActivation, b.ap(sum, {p, f}), {b.ap(sum, {p, f})});
  act.function = ActivationFunction::kExp;
  act.imm0 = 0.25f;
  store(b, out, b.ap(sum, {p, f}), p, f);
  const auto got = run_both(b, {{x, random_floats(p * f, 21)}, {y, random_floats(p * f, 22)}}, out);
  EXPECT_EQ(got.size(), static_cast<size_t>(p * f));
}

}  // namespace
}  // namespace openneuron::sim

namespace openneuron::sim {
namespace {

// The fast reduction folds each group in the reference's order: sums over several chunks,
// a strided source, max without and add with an identity.
TEST(Instructions, StreamingReductionEqualsTheReference) {
  for (bool strided : {true, false}) {
    for (AluOp op : {AluOp::kAdd, AluOp::kMax, AluOp::kSubtract, AluOp::kDivide}) {
      ProgramBuilder b;
      // Strided: [p, 2, 1250] even/odd halves. Contiguous: [p, 3, 1001], so groups of 1001
      // straddle the 1024-element chunks at lane offsets that are not multiples of eight.
      const int64_t p = 32, groups = strided ? 2 : 3, length = strided ? 1250 : 1001;
      const int64_t f = groups * length;
      // fp32 inputs: sums of bf16 values this size are exact in any order, fp32 ones are not.
      const int32_t x = b.hbm("x", DType::kFloat32, p * f, true);
      const int32_t out = b.hbm("out", DType::kFloat32, p * groups, false);
      const auto tx = load(b, x, DType::kFloat32, p, f, "tx");
      const int32_t r = b.tile("r", Memory::kSbuf, DType::kFloat32, p, groups);
      AccessPattern rows = tx;
      rows.rank = 3;
      rows.dims[1] = strided ? Dim{groups, 1} : Dim{groups, length};
      rows.dims[2] = strided ? Dim{length, 2} : Dim{length, 1};
      Instruction& reduce = b.add(Opcode::kTensorReduce, b.ap(r, {p, groups}), {rows});
      reduce.alu0 = op;
      reduce.negate = op == AluOp::kMax;
      store(b, out, b.ap(r, {p, groups}), p, groups);
      const auto got = run_both(b, {{x, random_floats(p * f, 31, 0.5f, 2.0f)}}, out);
      EXPECT_EQ(got.size(), static_cast<size_t>(p * groups));
    }
  }
}

}  // namespace
}  // namespace openneuron::sim

namespace openneuron::sim {
namespace {

// Mask byte i of kStreamShuffle's 32 in the instruction's pattern words.
void set_shuffle_mask(Instruction& instruction, const std::vector<int>& mask) {
  for (int w = 0; w < 4; ++w) {
    uint64_t word = 0;
    for (int b = 0; b < 8; ++b) word |= static_cast<uint64_t>(mask[8 * w + b]) << (8 * b);
    instruction.pattern[w] = static_cast<int64_t>(word);
  }
}

TEST(Instructions, StreamShuffleMovesPartitionsWithinQuadrants) {
  const int64_t p = 64, f = 5;
  std::vector<int> mask(32);
  for (int i = 0; i < 32; ++i) mask[i] = (i * 7 + 3) % 32;
  mask[4] = 255;  // keeps what the destination held
  ProgramBuilder b;
  const int32_t in = b.hbm("in", DType::kFloat32, p * f, true);
  const int32_t before = b.hbm("before", DType::kFloat32, p * f, true);
  const int32_t out = b.hbm("out", DType::kFloat32, p * f, false);
  const AccessPattern src = load(b, in, DType::kFloat32, p, f, "src");
  const AccessPattern dst = load(b, before, DType::kFloat32, p, f, "dst");
  set_shuffle_mask(b.add(Opcode::kStreamShuffle, dst, {src}), mask);
  store(b, out, dst, p, f);
  const auto values = random_floats(p * f, 21);
  const auto old = random_floats(p * f, 22);
  const auto got = run_both(b, {{in, values}, {before, old}}, out);
  for (int64_t d = 0; d < p; ++d) {
    const int m = mask[d % 32];
    for (int64_t j = 0; j < f; ++j) {
      const float want = m == 255 ? old[d * f + j] : values[(d / 32 * 32 + m) * f + j];
      ASSERT_EQ(got[d * f + j], want) << d << "," << j;
    }
  }
}

TEST(Instructions, StreamShuffleBroadcastsOnePartitionAndChecksItsSource) {
  const int64_t f = 3;
  ProgramBuilder b;
  const int32_t in = b.hbm("in", DType::kFloat32, f, true);
  const int32_t out = b.hbm("out", DType::kFloat32, 32 * f, false);
  const AccessPattern src = load(b, in, DType::kFloat32, 1, f, "src");
  const int32_t tile = b.tile("dst", Memory::kSbuf, DType::kFloat32, 32, f);
  Instruction& shuffle = b.add(Opcode::kStreamShuffle, b.ap(tile, {32, f}), {src});
  set_shuffle_mask(shuffle, std::vector<int>(32, 0));
  store(b, out, b.ap(tile, {32, f}), 32, f);
  const auto values = random_floats(f, 23);
  const auto got = run_both(b, {{in, values}}, out);
  for (int64_t d = 0; d < 32; ++d)
    for (int64_t j = 0; j < f; ++j) ASSERT_EQ(got[d * f + j], values[j]);
  // Partition 1 of a one-partition source does not exist.
  std::vector<int> bad(32, 0);
  bad[7] = 1;
  set_shuffle_mask(b.program().instructions[1], bad);
  try {
    Simulator simulator(b.program(), trn2());
    FAIL() << "expected out-of-bounds";
  } catch (const SimError& error) {
    EXPECT_EQ(error.rule, rule::kOutOfBounds) << error.what();
  }
}

TEST(Instructions, NonzeroWithCountCompactsTheFirstPartitionOfEachGpSimdCore) {
  const int64_t p = 128, f = 40;
  ProgramBuilder b;
  const int32_t in = b.hbm("in", DType::kFloat32, p * f, true);
  const int32_t before = b.hbm("before", DType::kFloat32, p * (f + 1), true);
  const int32_t out = b.hbm("out", DType::kFloat32, p * (f + 1), false);
  const AccessPattern src = load(b, in, DType::kFloat32, p, f, "src");
  const AccessPattern dst = load(b, before, DType::kFloat32, p, f + 1, "dst");
  Instruction& nonzero = b.add(Opcode::kNonzeroWithCount, dst, {src});
  nonzero.imm0 = 256.0f;  // index_offset
  nonzero.imm1 = -1.0f;   // padding_val
  store(b, out, dst, p, f + 1);
  auto values = random_floats(p * f, 31);
  for (size_t i = 0; i < values.size(); ++i) {
    if (i % 3 != 0) values[i] = 0.0f;  // about a third nonzero
  }
  values[16 * f + 5] = std::numeric_limits<float>::quiet_NaN();  // NaN is nonzero
  values[16 * f + 6] = -0.0f;                                    // negative zero is zero
  for (int64_t j = 0; j < f; ++j) values[32 * f + j] = 0.0f;     // a partition with none
  const auto old = random_floats(p * (f + 1), 32);
  const auto got = run_both(b, {{in, values}, {before, old}}, out);
  for (int64_t d = 0; d < p; ++d) {
    std::vector<float> want(old.begin() + d * (f + 1), old.begin() + (d + 1) * (f + 1));
    if (d % 16 == 0) {
      int64_t count = 0;
      for (int64_t j = 0; j < f; ++j) {
        const float v = values[d * f + j];
        if (v != 0.0f || std::isnan(v)) want[count++] = static_cast<float>(j) + 256.0f;
      }
      for (int64_t j = count; j < f; ++j) want[j] = -1.0f;
      want[f] = static_cast<float>(count);
      if (d == 32) {
        EXPECT_EQ(count, 0);
      }
    }
    for (int64_t j = 0; j <= f; ++j) ASSERT_EQ(got[d * (f + 1) + j], want[j]) << d << "," << j;
  }
}

TEST(Instructions, NonzeroWithCountNamesItsRules) {
  const auto expect_rule = [](int64_t dst_free, DType dst_dtype, Engine engine,
                              const char* expected) {
    ProgramBuilder b;
    const int32_t in = b.hbm("in", DType::kFloat32, 128 * 8, true);
    const AccessPattern src = load(b, in, DType::kFloat32, 128, 8, "src");
    const int32_t tile = b.tile("dst", Memory::kSbuf, dst_dtype, 128, dst_free);
    b.add(Opcode::kNonzeroWithCount, b.ap(tile, {128, dst_free}), {src}).engine = engine;
    try {
      Simulator simulator(b.program(), trn2());
      ADD_FAILURE() << "expected " << expected;
    } catch (const SimError& error) {
      EXPECT_EQ(error.rule, std::string(expected)) << error.what();
    }
  };
  expect_rule(8, DType::kInt32, Engine::kGpSimd, rule::kShapeMismatch);  // no room for the count
  expect_rule(9, DType::kBFloat16, Engine::kGpSimd, rule::kDtype);       // indices inexact
  expect_rule(9, DType::kInt32, Engine::kVector, rule::kBadOperand);     // GpSimd only
}

}  // namespace
}  // namespace openneuron::sim
