// Adaptive eager segments against the same ops queued one by one, bit for bit.
#include "adaptive/segment.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "adaptive/adaptive_eager.h"
#include "runtime/errors.h"
#include "runtime/runtime.h"

namespace openneuron::adaptive {
namespace {

using kernels::DType;
using kernels::PointwiseOp;
using kernels::TensorView;

struct Buffer {
  std::vector<float> data;
  TensorView view(std::vector<int64_t> sizes = {}) {
    TensorView v;
    v.data = data.data();
    v.dtype = DType::Float32;
    if (sizes.empty()) sizes = {static_cast<int64_t>(data.size())};
    v.ndim = static_cast<int>(sizes.size());
    int64_t stride = 1;
    for (int d = v.ndim - 1; d >= 0; --d) {
      v.sizes[d] = sizes[d];
      v.strides[d] = stride;
      stride *= sizes[d];
    }
    return v;
  }
};

Buffer random_buffer(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  Buffer b;
  for (size_t i = 0; i < n; ++i) b.data.push_back(normal(gen));
  return b;
}

RecordedOp make_op(const char* name, PointwiseOp op, TensorView out, std::vector<TensorView> inputs,
                   double p0 = NAN) {
  RecordedOp r;
  r.name = name;
  r.op = op;
  r.out = RecordedView::of(out);
  r.num_inputs = static_cast<int>(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) r.inputs[k].view = RecordedView::of(inputs[k]);
  if (!std::isnan(p0)) {
    r.params.values[0] = kernels::Scalar::from_double(p0);
    r.params.present[0] = true;
  }
  return r;
}

class SegmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    stream_ = &runtime::Runtime::get().device(0).default_stream();
    reset_metrics();
    set_enabled(true);
  }
  void TearDown() override {
    set_enabled(false);
    stream_->synchronize();
  }
  // Runs `ops` recorded (one segment) and again one by one on copies of the same buffers.
  void expect_fused_equals_eager(const std::vector<RecordedOp>& ops, std::vector<Buffer*> buffers) {
    std::vector<std::vector<float>> before;
    for (Buffer* b : buffers) before.push_back(b->data);
    for (const RecordedOp& op : ops) ASSERT_TRUE(record(*stream_, op));
    stream_->synchronize();
    std::vector<std::vector<float>> fused;
    for (Buffer* b : buffers) fused.push_back(b->data);
    for (size_t k = 0; k < buffers.size(); ++k) buffers[k]->data = before[k];
    for (const RecordedOp& op : ops) run_recorded_op(op);
    for (size_t k = 0; k < buffers.size(); ++k) {
      EXPECT_EQ(0, std::memcmp(fused[k].data(), buffers[k]->data.data(), fused[k].size() * 4))
          << "buffer " << k;
    }
  }
  runtime::Stream* stream_ = nullptr;
};

TEST_F(SegmentTest, AChainRunsAsOneFusedKernelEqualToEager) {
  const size_t n = 50000;  // several tiles
  Buffer x = random_buffer(n, 1), y = random_buffer(n, 2), a = random_buffer(n, 3),
         b = random_buffer(n, 4), c = random_buffer(n, 5);
  expect_fused_equals_eager(
      {make_op("aten::mul", PointwiseOp::Mul, a.view(), {x.view(), y.view()}),
       make_op("aten::tanh", PointwiseOp::Tanh, b.view(), {a.view()}),
       make_op("aten::add", PointwiseOp::AddAlpha, c.view(), {b.view(), x.view()}, 0.5)},
      {&x, &y, &a, &b, &c});
  const Metrics m = metrics();
  EXPECT_EQ(m.fused_segments, 1);
  EXPECT_EQ(m.fused_ops, 3);
  EXPECT_EQ(m.ops_recorded, 3);
}

TEST_F(SegmentTest, AWrongFusedResultIsCaught) {
  // Proof that the comparisons above see the fused kernel's output: perturb it and compare.
  const size_t n = 5000;
  Buffer x = random_buffer(n, 1), a = random_buffer(n, 3), b = random_buffer(n, 4);
  set_perturb_fused_results(true);
  ASSERT_TRUE(record(*stream_, make_op("aten::exp", PointwiseOp::Exp, a.view(), {x.view()})));
  ASSERT_TRUE(record(*stream_, make_op("aten::neg", PointwiseOp::Neg, b.view(), {a.view()})));
  stream_->synchronize();
  set_perturb_fused_results(false);
  std::vector<float> fused = a.data;
  run_recorded_op(make_op("aten::exp", PointwiseOp::Exp, a.view(), {x.view()}));
  EXPECT_NE(0, std::memcmp(fused.data(), a.data.data(), n * 4));
}

TEST_F(SegmentTest, InPlaceUpdatesReadTheirLatestVersion) {
  const size_t n = 20000;
  Buffer x = random_buffer(n, 1), y = random_buffer(n, 2), z = random_buffer(n, 3);
  expect_fused_equals_eager(
      {make_op("aten::mul", PointwiseOp::Mul, z.view(), {x.view(), y.view()}),
       make_op("aten::add_", PointwiseOp::AddAlpha, x.view(), {x.view(), z.view()}, 1.0),
       make_op("aten::sigmoid_", PointwiseOp::Sigmoid, x.view(), {x.view()}),
       make_op("aten::mul", PointwiseOp::Mul, z.view(), {x.view(), y.view()})},
      {&x, &y, &z});
  EXPECT_EQ(metrics().fused_segments, 1);
}

TEST_F(SegmentTest, IndependentChainsAndInPlaceOverwritesKeepEagerOrder) {
  // Two chains the compiler fuses apart, and an in-place write to an operand both read.
  const size_t n = 12000;
  Buffer x = random_buffer(n, 1), y = random_buffer(n, 2), z = random_buffer(n, 3),
         p = random_buffer(n, 4), q = random_buffer(n, 5), r = random_buffer(n, 6),
         t = random_buffer(n, 7);
  expect_fused_equals_eager(
      {make_op("aten::cos", PointwiseOp::Cos, p.view(), {x.view()}),
       make_op("aten::mul", PointwiseOp::Mul, q.view(), {p.view(), y.view()}),
       make_op("aten::sin", PointwiseOp::Sin, r.view(), {x.view()}),
       make_op("aten::neg_", PointwiseOp::Neg, x.view(), {x.view()}),
       make_op("aten::mul", PointwiseOp::Mul, t.view(), {r.view(), z.view()})},
      {&x, &y, &z, &p, &q, &r, &t});
  EXPECT_EQ(metrics().fused_segments + metrics().fallbacks, 1);
}

TEST_F(SegmentTest, AnotherShapeEndsTheSegment) {
  Buffer x = random_buffer(4096, 1), y = random_buffer(4096, 2), z = random_buffer(4096, 3);
  expect_fused_equals_eager(
      {make_op("aten::neg", PointwiseOp::Neg, y.view(), {x.view()}),
       make_op("aten::exp", PointwiseOp::Exp, z.view({64, 64}), {y.view({64, 64})})},
      {&x, &y, &z});
  const Metrics m = metrics();
  EXPECT_EQ(m.ended_by_shape, 1);
  EXPECT_EQ(m.single_ops, 2);
}

TEST_F(SegmentTest, MemorySeenTwoWaysEndsTheSegment) {
  // The second op reads the first one's output shifted by one element: tile by tile it would
  // read values not yet written.
  Buffer x = random_buffer(4097, 1), y = random_buffer(4097, 2);
  TensorView head = y.view({4096});
  TensorView shifted = head;
  shifted.data = y.data.data() + 1;
  expect_fused_equals_eager({make_op("aten::exp", PointwiseOp::Exp, head, {x.view({4096})}),
                             make_op("aten::neg_", PointwiseOp::Neg, shifted, {shifted})},
                            {&x, &y});
  EXPECT_EQ(metrics().ended_by_alias, 1);
  EXPECT_EQ(metrics().fused_segments, 0);
}

TEST_F(SegmentTest, ASecondIdenticalSegmentHitsTheCache) {
  Buffer x = random_buffer(3000, 1), y = random_buffer(3000, 2);
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(record(*stream_, make_op("aten::exp", PointwiseOp::Exp, y.view(), {x.view()})));
    ASSERT_TRUE(record(*stream_, make_op("aten::sqrt_", PointwiseOp::Sqrt, y.view(), {y.view()})));
    stream_->synchronize();
  }
  EXPECT_EQ(metrics().compiles + metrics().cache_hits, 2);
  EXPECT_GE(metrics().cache_hits, 1);
}

TEST_F(SegmentTest, ResultsOfFreedTensorsAreNotStored) {
  runtime::CachingAllocator& allocator = runtime::Runtime::get().device(0).allocator();
  Buffer x = random_buffer(4096, 1), out = random_buffer(4096, 2), expected = out;
  TensorView temp = x.view();
  temp.data = allocator.allocate(4096 * 4, *stream_);
  RecordedOp first = make_op("aten::exp", PointwiseOp::Exp, temp, {x.view()});
  first.out_in_device_block = true;
  ASSERT_TRUE(record(*stream_, first));
  ASSERT_TRUE(record(*stream_, make_op("aten::neg", PointwiseOp::Neg, out.view(), {temp})));
  allocator.free(temp.data);  // the temporary dies before the segment runs
  stream_->synchronize();
  std::vector<float> scratch(4096);
  TensorView scratch_view = expected.view();
  scratch_view.data = scratch.data();
  run_recorded_op(make_op("aten::exp", PointwiseOp::Exp, scratch_view, {x.view()}));
  run_recorded_op(make_op("aten::neg", PointwiseOp::Neg, expected.view(), {scratch_view}));
  EXPECT_EQ(0, std::memcmp(out.data.data(), expected.data.data(), 4096 * 4));
  EXPECT_EQ(metrics().stores_skipped, 1);
}

TEST_F(SegmentTest, AFailingSegmentNamesItsEagerOpsAndTheStreamStaysUsable) {
  Buffer x = random_buffer(3000, 1), y = random_buffer(3000, 2);
  RecordedOp bad = make_op("aten::tanh", PointwiseOp::Tanh, y.view(), {y.view()});
  bad.compute = DType::Int64;  // float-only op asked for integer compute: the kernel throws
  ASSERT_TRUE(record(*stream_, make_op("aten::neg", PointwiseOp::Neg, y.view(), {x.view()})));
  ASSERT_TRUE(record(*stream_, bad));
  try {
    stream_->synchronize();
    FAIL() << "the failing segment raised nothing";
  } catch (const runtime::QueuedWorkError& error) {
    EXPECT_NE(std::string(error.what()).find("aten::tanh"), std::string::npos) << error.what();
  }
  ASSERT_TRUE(record(*stream_, make_op("aten::neg", PointwiseOp::Neg, y.view(), {x.view()})));
  stream_->synchronize();
  EXPECT_EQ(y.data[7], -x.data[7]);
}

TEST_F(SegmentTest, ASmallOpOnAnIdleStreamRunsAtOnceAndBehindWorkIsRecorded) {
  Buffer x = random_buffer(runtime::kSmallWorkElements, 1), y = random_buffer(2048, 2);
  const RecordedOp neg = make_op("aten::neg", PointwiseOp::Neg, y.view(), {x.view()});
  stream_->synchronize();
  EXPECT_FALSE(record(*stream_, neg));  // the caller runs it, as plain eager would
  EXPECT_EQ(metrics().ran_at_once, 1);
  std::atomic<bool> release{false};
  stream_->enqueue("test::hold", [&release] {
    while (!release.load()) std::this_thread::yield();
  });
  EXPECT_TRUE(record(*stream_, neg));
  EXPECT_TRUE(record(*stream_, make_op("aten::exp", PointwiseOp::Exp, y.view(), {y.view()})));
  release = true;
  stream_->synchronize();
  EXPECT_EQ(metrics().fused_ops, 2);
  EXPECT_EQ(y.data[5], std::exp(-x.data[5]));
  // One element more than small work is recorded on an idle stream too.
  Buffer big = random_buffer(runtime::kSmallWorkElements + 1, 3);
  const float first = big.data[0];
  EXPECT_TRUE(record(*stream_, make_op("aten::neg", PointwiseOp::Neg, big.view(), {big.view()})));
  stream_->synchronize();  // before `big` goes out of scope
  EXPECT_EQ(big.data[0], -first);
}

TEST_F(SegmentTest, OffRecordsNothing) {
  set_enabled(false);
  Buffer x = random_buffer(10, 1), y = random_buffer(10, 2);
  EXPECT_FALSE(record(*stream_, make_op("aten::neg", PointwiseOp::Neg, y.view(), {x.view()})));
}

TEST(ViewRules, RecordedViewsRoundTripAndBoundTheirDims) {
  std::vector<float> storage(64);
  TensorView view;
  view.data = storage.data();
  view.ndim = kMaxRecordedDims;
  for (int d = 0; d < view.ndim; ++d) {
    view.sizes[d] = d % 2 + 1;
    view.strides[d] = 1 << d;
  }
  ASSERT_TRUE(RecordedView::fits(view));
  const TensorView back = RecordedView::of(view).expand();
  EXPECT_EQ(back.data, view.data);
  EXPECT_EQ(back.ndim, view.ndim);
  for (int d = 0; d < view.ndim; ++d) {
    EXPECT_EQ(back.sizes[d], view.sizes[d]);
    EXPECT_EQ(back.strides[d], view.strides[d]);
  }
  view.ndim = kMaxRecordedDims + 1;
  view.sizes[kMaxRecordedDims] = 1;
  EXPECT_FALSE(RecordedView::fits(view));
}

TEST(ViewRules, OverlapAndIdentity) {
  std::vector<float> storage(100);
  RecordedView a;
  a.data = storage.data();
  a.ndim = 1;
  a.sizes[0] = 50;
  a.strides[0] = 1;
  RecordedView later = a;
  later.data = storage.data() + 50;
  EXPECT_FALSE(views_overlap(a, later));
  later.data = storage.data() + 49;
  EXPECT_TRUE(views_overlap(a, later));
  EXPECT_TRUE(same_view(a, a));
  EXPECT_FALSE(same_view(a, later));
}

}  // namespace
}  // namespace openneuron::adaptive
