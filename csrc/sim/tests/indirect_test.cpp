// Run-time offsets (scalar_offset / vector_offset) on DMA: gathers and scatters against a plain
// loop over the same index values, both executors, bounds errors, skip, rules and timing.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "sim/errors.h"
#include "sim/simulator.h"
#include "sim/tests/program_builder.h"

namespace openneuron::sim {
namespace {

using testing::ProgramBuilder;
using testing::random_floats;
using testing::read_floats;
using testing::set_floats;

constexpr int64_t kRows = 8, kColumns = 16;

// A program that loads `indices` (int32) into an SBUF index tile and moves rows of an HBM
// table [kRows, kColumns] through a DMA with a run-time offset, then stores the result.
struct IndirectProgram {
  ProgramBuilder b;
  int32_t table = -1, index_input = -1, index = -1, out = -1, zeros = -1;
  int32_t dma_line = 0;

  // Gather: out[r] = table[indices[r]] (vector) or out[0] = table[indices[0]] (scalar).
  void gather(IndirectKind kind, int64_t count, bool skip = false) {
    table = b.hbm("table", DType::kFloat32, kRows * kColumns, true);
    index_input = b.hbm("indices", DType::kInt32, count, true);
    index = b.tile("index", Memory::kSbuf, DType::kInt32, count, 1);
    const int32_t rows = b.tile("rows", Memory::kSbuf, DType::kFloat32, count, kColumns);
    out = b.hbm("out", DType::kFloat32, count * kColumns, false);
    b.add(Opcode::kDmaCopy, b.ap(index, {count, 1}), {b.ap(index_input, {count, 1})});
    Instruction& gather =
        b.add(Opcode::kDmaCopy, b.ap(rows, {count, kColumns}), {b.ap(table, {count, kColumns})});
    gather.indirect.kind = kind;
    gather.indirect.stride = kColumns;
    gather.indirect.bound = kRows;
    gather.indirect.skip_out_of_bounds = skip;
    gather.indirect.index = b.ap(index, {count, 1});
    dma_line = gather.line;
    b.add(Opcode::kDmaCopy, b.ap(out, {count, kColumns}), {b.ap(rows, {count, kColumns})});
  }

  // Scatter: out (kRows × kColumns, zeroed first) row indices[r] = source row r.
  void scatter(int64_t count, bool skip = false) {
    const int32_t source = b.hbm("source", DType::kFloat32, count * kColumns, true);
    zeros = b.hbm("zeros", DType::kFloat32, kRows * kColumns, true);
    index_input = b.hbm("indices", DType::kInt32, count, true);
    index = b.tile("index", Memory::kSbuf, DType::kInt32, count, 1);
    const int32_t rows = b.tile("rows", Memory::kSbuf, DType::kFloat32, count, kColumns);
    out = b.hbm("out", DType::kFloat32, kRows * kColumns, false);
    table = source;
    b.add(Opcode::kDmaCopy, b.ap(out, {kRows, kColumns}), {b.ap(zeros, {kRows, kColumns})});
    b.add(Opcode::kDmaCopy, b.ap(index, {count, 1}), {b.ap(index_input, {count, 1})});
    b.add(Opcode::kDmaCopy, b.ap(rows, {count, kColumns}), {b.ap(source, {count, kColumns})});
    Instruction& scatter =
        b.add(Opcode::kDmaCopy, b.ap(out, {count, kColumns}), {b.ap(rows, {count, kColumns})});
    scatter.indirect.kind = IndirectKind::kVector;
    scatter.indirect.on_dst = true;
    scatter.indirect.stride = kColumns;
    scatter.indirect.bound = kRows;
    scatter.indirect.skip_out_of_bounds = skip;
    scatter.indirect.index = b.ap(index, {count, 1});
    dma_line = scatter.line;
  }

  // Runs with `indices` and the table's values; returns `out`.
  std::vector<float> run(const std::vector<float>& indices, const std::vector<float>& values,
                         bool reference) {
    Simulator simulator(b.program(), core_profile("trn2"));
    set_floats(simulator, index_input, indices);
    set_floats(simulator, table, values);
    if (zeros >= 0) set_floats(simulator, zeros, std::vector<float>(kRows * kColumns, 0.0f));
    simulator.run(reference);
    return read_floats(simulator, out);
  }
};

std::vector<float> gathered(const std::vector<float>& table, const std::vector<float>& indices) {
  std::vector<float> out;
  for (float index : indices) {
    const auto row = static_cast<int64_t>(index);
    out.insert(out.end(), table.begin() + row * kColumns, table.begin() + (row + 1) * kColumns);
  }
  return out;
}

TEST(Indirect, VectorOffsetGathersRowsInBothExecutors) {
  const std::vector<float> indices = {5, 0, 7, 2, 2};
  const auto table = random_floats(kRows * kColumns, 1);
  for (bool reference : {false, true}) {
    IndirectProgram p;
    p.gather(IndirectKind::kVector, static_cast<int64_t>(indices.size()));
    EXPECT_EQ(p.run(indices, table, reference), gathered(table, indices)) << reference;
  }
}

TEST(Indirect, ScalarOffsetMovesTheWholePattern) {
  const auto table = random_floats(kRows * kColumns, 2);
  for (float row : {0.0f, 3.0f, 7.0f}) {
    for (bool reference : {false, true}) {
      IndirectProgram p;
      p.gather(IndirectKind::kScalar, 1);
      EXPECT_EQ(p.run({row}, table, reference), gathered(table, {row})) << row;
    }
  }
}

TEST(Indirect, VectorOffsetScattersRows) {
  const std::vector<float> indices = {6, 1, 3};
  const auto source = random_floats(indices.size() * kColumns, 3);
  std::vector<float> expected(kRows * kColumns, 0.0f);
  for (size_t r = 0; r < indices.size(); ++r) {
    std::copy(source.begin() + r * kColumns, source.begin() + (r + 1) * kColumns,
              expected.begin() + static_cast<int64_t>(indices[r]) * kColumns);
  }
  for (bool reference : {false, true}) {
    IndirectProgram p;
    p.scatter(static_cast<int64_t>(indices.size()));
    EXPECT_EQ(p.run(indices, source, reference), expected);
  }
}

Instruction& dma_of(IndirectProgram& p) { return p.b.program().instructions[1]; }

TEST(Indirect, OffsetOutOfBoundsIsANamedErrorAtTheKernelLine) {
  const auto table = random_floats(kRows * kColumns, 4);
  for (float bad : {8.0f, -1.0f}) {
    for (bool reference : {false, true}) {
      IndirectProgram p;
      p.gather(IndirectKind::kVector, 3);
      try {
        p.run({1, bad, 2}, table, reference);
        FAIL() << "expected out-of-bounds for " << bad;
      } catch (const SimError& error) {
        EXPECT_EQ(error.rule, rule::kOutOfBounds);
        EXPECT_EQ(error.line, p.dma_line);
        const std::string text = error.what();
        EXPECT_NE(text.find("offset " + std::to_string(static_cast<int>(bad)) + " (row 1)"),
                  std::string::npos)
            << text;
        EXPECT_NE(text.find("[0, 8)"), std::string::npos) << text;
      }
    }
  }
}

// A bound that lets the access pass the table's end is no error by itself (kernels move
// accesses by less than their bound allows); a value read at run time that does so is one.
TEST(Indirect, AnOffsetThatMovesTheAccessPastTheTensorIsANamedErrorWhenItIsRead) {
  const auto table = random_floats(kRows * kColumns, 7);
  for (bool reference : {false, true}) {
    IndirectProgram fine;
    fine.gather(IndirectKind::kVector, 3);
    dma_of(fine).indirect.bound = kRows + 1;
    EXPECT_EQ(fine.run({1, 7, 2}, table, reference), gathered(table, {1, 7, 2}));
    IndirectProgram past;
    past.gather(IndirectKind::kVector, 3);
    dma_of(past).indirect.bound = kRows + 1;
    try {
      past.run({1, static_cast<float>(kRows), 2}, table, reference);
      FAIL() << "expected out-of-bounds";
    } catch (const SimError& error) {
      EXPECT_EQ(error.rule, rule::kOutOfBounds);
      EXPECT_EQ(error.line, past.dma_line);
      EXPECT_NE(std::string(error.what()).find("past the end of"), std::string::npos)
          << error.what();
    }
  }
}

TEST(Indirect, SkipLeavesOutOfBoundsRowsOut) {
  const std::vector<float> indices = {4, 9, 0};
  const auto source = random_floats(indices.size() * kColumns, 5);
  std::vector<float> expected(kRows * kColumns, 0.0f);
  for (size_t r : {0u, 2u}) {
    std::copy(source.begin() + r * kColumns, source.begin() + (r + 1) * kColumns,
              expected.begin() + static_cast<int64_t>(indices[r]) * kColumns);
  }
  for (bool reference : {false, true}) {
    IndirectProgram p;
    p.scatter(static_cast<int64_t>(indices.size()), /*skip=*/true);
    EXPECT_EQ(p.run(indices, source, reference), expected);
  }
}

TEST(Indirect, IndexNeverWrittenIsReported) {
  IndirectProgram p;
  p.gather(IndirectKind::kVector, 2);
  p.b.program().instructions.erase(p.b.program().instructions.begin());  // no index load
  Simulator simulator(p.b.program(), core_profile("trn2"));
  set_floats(simulator, p.table, random_floats(kRows * kColumns, 6));
  try {
    simulator.run();
    FAIL() << "expected uninitialized-read";
  } catch (const SimError& error) {
    EXPECT_EQ(error.rule, rule::kUninitializedRead) << error.what();
    EXPECT_EQ(error.line, p.dma_line);
  }
}

void expect_rule(const char* rule_name, const std::function<void(IndirectProgram&)>& change) {
  IndirectProgram p;
  p.gather(IndirectKind::kVector, 3);
  change(p);
  try {
    Simulator simulator(p.b.program(), core_profile("trn2"));
    FAIL() << "expected rule " << rule_name;
  } catch (const SimError& error) {
    EXPECT_EQ(error.rule, rule_name) << error.what();
    EXPECT_EQ(error.line, p.dma_line) << error.what();
  }
}

TEST(Indirect, Rules) {
  // Index tiles hold integers.
  expect_rule(rule::kDtype,
              [](IndirectProgram& p) { dma_of(p).indirect.index.dtype = DType::kFloat32; });
  // One index per row.
  expect_rule(rule::kShapeMismatch,
              [](IndirectProgram& p) { dma_of(p).indirect.index.dims[0].size = 2; });
  // The index is read from SBUF, not HBM.
  expect_rule(rule::kBadOperand,
              [](IndirectProgram& p) { dma_of(p).indirect.index = p.b.ap(p.index_input, {3, 1}); });
  // Only DMA takes run-time offsets.
  expect_rule(rule::kBadOperand, [](IndirectProgram& p) {
    dma_of(p).opcode = Opcode::kTensorCopy;
    dma_of(p).engine = Engine::kVector;
  });
}

TEST(Indirect, TimingWaitsForTheIndexAndPaysPerRow) {
  IndirectProgram p;
  p.gather(IndirectKind::kVector, 4);
  Simulator simulator(p.b.program(), core_profile("trn2"));
  const Timeline timeline = simulator.timing();
  // The gather starts after the index load ends.
  EXPECT_GE(timeline.instructions[1].start_ns, timeline.instructions[0].end_ns);
  // Four separate rows cost more than the same bytes in one contiguous run.
  Instruction plain = p.b.program().instructions[1];
  plain.indirect = IndirectOffset{};
  const CoreProfile& profile = core_profile("trn2");
  const double indirect_ns =
      instruction_cost_ns(p.b.program(), p.b.program().instructions[1], profile);
  const double plain_ns = instruction_cost_ns(p.b.program(), plain, profile);
  EXPECT_GT(indirect_ns, plain_ns + profile.indirect_index_cycles / profile.gpsimd_ghz - 1e-9);
}

}  // namespace
}  // namespace openneuron::sim
