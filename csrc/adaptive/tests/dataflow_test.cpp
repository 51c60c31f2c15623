// A segment's dataflow as the builder resolves it op by op: versions, aliases, limits.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "adaptive/segment_dataflow.h"

namespace openneuron::adaptive {
namespace {

using kernels::PointwiseOp;

RecordedView view_of(float* data, int64_t n) {
  RecordedView v;
  v.data = data;
  v.ndim = 1;
  v.sizes[0] = n;
  v.strides[0] = 1;
  return v;
}

RecordedOp binary(PointwiseOp op, RecordedView out, RecordedView a, RecordedView b) {
  RecordedOp r;
  r.op = op;
  r.out = out;
  r.num_inputs = 2;
  r.inputs[0].view = a;
  r.inputs[1].view = b;
  return r;
}

RecordedOp with_host_scalar(PointwiseOp op, RecordedView out, RecordedView a) {
  RecordedOp r = binary(op, out, a, a);
  r.inputs[1].on_host = true;
  return r;
}

TEST(DataflowTest, VersionsOfABufferWrittenInPlace) {
  std::vector<float> a(8), b(8), t1(8), t2(8);
  const RecordedView va = view_of(a.data(), 8), vb = view_of(b.data(), 8);
  const RecordedView v1 = view_of(t1.data(), 8), v2 = view_of(t2.data(), 8);
  const std::vector<RecordedOp> ops = {
      binary(PointwiseOp::Mul, v1, va, vb),        // t1 = a * b
      binary(PointwiseOp::AddAlpha, va, v1, va),   // a = t1 + a (in place)
      with_host_scalar(PointwiseOp::Mul, v2, va),  // t2 = a * 2
  };
  const SegmentDataflow flow = analyse_dataflow(ops);
  ASSERT_EQ(flow.external.size(), 3u);  // a, b, the host scalar
  EXPECT_EQ(flow.external[0].view.data, a.data());
  EXPECT_TRUE(flow.external[2].on_host);
  EXPECT_EQ(flow.args[0][0], 0);
  EXPECT_EQ(flow.args[0][1], 1);
  EXPECT_EQ(flow.args[1][0], -1);  // op 0's result
  EXPECT_EQ(flow.args[1][1], 0);   // a before it is overwritten
  EXPECT_EQ(flow.args[2][0], -2);  // a's new version, op 1's result
  EXPECT_EQ(flow.args[2][1], 2);
  EXPECT_EQ(flow.outputs, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(flow.output_aliases, (std::vector<int>{-1, 0, -1}));  // op 1 overwrites operand a
}

TEST(DataflowTest, MemorySeenTwoWaysWithAWriteDoesNotJoin) {
  std::vector<float> a(16), t(16);
  DataflowBuilder builder;
  builder.add(binary(PointwiseOp::AddAlpha, view_of(t.data(), 8), view_of(a.data(), 8),
                     view_of(a.data(), 8)));
  // Reading a's other half, or an overlapping view of memory only read, joins.
  EXPECT_EQ(builder.fits(binary(PointwiseOp::AddAlpha, view_of(t.data() + 8, 8),
                                view_of(a.data() + 4, 8), view_of(a.data() + 8, 8))),
            DataflowBuilder::Fit::Joins);
  // Reading t (written) through another view does not.
  EXPECT_EQ(builder.fits(binary(PointwiseOp::AddAlpha, view_of(a.data() + 8, 4),
                                view_of(t.data() + 4, 4), view_of(t.data() + 4, 4))),
            DataflowBuilder::Fit::Alias);
  // Nor does writing memory it reads through another view.
  EXPECT_EQ(builder.fits(binary(PointwiseOp::AddAlpha, view_of(a.data() + 2, 8),
                                view_of(t.data(), 8), view_of(t.data(), 8))),
            DataflowBuilder::Fit::Alias);
}

TEST(DataflowTest, HostScalarsCountTowardsTheOperandLimit) {
  // x = x * s, over and over: one view, but every op brings a new host scalar operand.
  std::vector<float> x(4);
  const RecordedView vx = view_of(x.data(), 4);
  DataflowBuilder builder;
  size_t joined = 0;
  while (builder.fits(with_host_scalar(PointwiseOp::Mul, vx, vx)) == DataflowBuilder::Fit::Joins) {
    builder.add(with_host_scalar(PointwiseOp::Mul, vx, vx));
    ASSERT_LE(++joined, 100u);
  }
  EXPECT_EQ(builder.operands(), DataflowBuilder::kMaxOperands);
  // x is two operands (read, then written in place); every op adds its scalar.
  EXPECT_EQ(joined, DataflowBuilder::kMaxOperands - 2);
}

// try_add is fits() and add() in one pass: over a random op sequence over a few buffers (views
// reused, read twice, overlapping differently, host scalars), it decides and resolves alike.
TEST(DataflowTest, TryAddDecidesAndResolvesAsFitsThenAdd) {
  std::vector<float> memory(64);
  std::mt19937 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    DataflowBuilder separate, joined;
    for (int step = 0; step < 12; ++step) {
      const auto pick = [&] {
        const int start = static_cast<int>(random() % 4) * 8 + static_cast<int>(random() % 2) * 4;
        return view_of(memory.data() + start, 8);
      };
      const RecordedView out = pick(), a = pick();
      RecordedOp op = random() % 3 == 0
                          ? with_host_scalar(PointwiseOp::Mul, out, a)
                          : binary(PointwiseOp::AddAlpha, out, a, random() % 2 ? a : pick());
      const DataflowBuilder::Fit expected = separate.fits(op);
      ASSERT_EQ(joined.try_add(op), expected) << trial << "," << step;
      if (expected != DataflowBuilder::Fit::Joins) break;
      separate.add(op);
    }
    const SegmentDataflow x = separate.take(), y = joined.take();
    ASSERT_EQ(x.args, y.args) << trial;
    ASSERT_EQ(x.external.size(), y.external.size()) << trial;
    ASSERT_EQ(x.outputs, y.outputs) << trial;
    ASSERT_EQ(x.output_aliases, y.output_aliases) << trial;
  }
}

}  // namespace
}  // namespace openneuron::adaptive
