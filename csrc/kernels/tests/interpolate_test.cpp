// The interpolation kernels: source indices of both nearest rules, linear and cubic values
// against double-precision formulas, backward as the exact adjoint of forward, strided and
// 16-bit operands.
#include "kernels/nn/interpolate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::for_each_index;
using testing::get;
using testing::HostTensor;
using testing::make_tensor;
using testing::permute;
using testing::random_tensor;
using testing::set;
using Index = std::vector<int64_t>;

InterpolateParams params_for(InterpolateMode mode, bool align_corners = false) {
  InterpolateParams p;
  p.mode = mode;
  p.align_corners = align_corners;
  return p;
}

// A 1-D signal 0, 1, 2, ... so an output's value names the source index it read.
HostTensor ramp(int64_t length) {
  HostTensor t = make_tensor(DType::Float32, {1, 1, length});
  for (int64_t i = 0; i < length; ++i) set(t.view, {0, 0, i}, static_cast<double>(i));
  return t;
}

std::vector<double> resample_ramp(InterpolateMode mode, int64_t in, int64_t out_size,
                                  bool align_corners = false, double scale = 0.0) {
  HostTensor input = ramp(in);
  HostTensor out = make_tensor(DType::Float32, {1, 1, out_size});
  InterpolateParams p = params_for(mode, align_corners);
  p.scales[0] = scale;
  interpolate_forward(out.view, input.view, p);
  std::vector<double> values;
  for (int64_t i = 0; i < out_size; ++i) values.push_back(get(out.view, {0, 0, i}));
  return values;
}

TEST(InterpolateTest, NearestRulesPickPyTorchsSourceIndices) {
  // Legacy rule floor(o * 3/5) against the half-pixel rule floor((o + 0.5) * 3/5).
  EXPECT_EQ(resample_ramp(InterpolateMode::Nearest, 3, 5), (std::vector<double>{0, 0, 1, 1, 2}));
  EXPECT_EQ(resample_ramp(InterpolateMode::NearestExact, 3, 5),
            (std::vector<double>{0, 0, 1, 2, 2}));
  // Downsampling, and a caller's scale factor overriding the size ratio.
  EXPECT_EQ(resample_ramp(InterpolateMode::Nearest, 5, 2), (std::vector<double>{0, 2}));
  EXPECT_EQ(resample_ramp(InterpolateMode::NearestExact, 5, 2), (std::vector<double>{1, 3}));
  EXPECT_EQ(resample_ramp(InterpolateMode::Nearest, 4, 5, false, 1.5),
            (std::vector<double>{0, 0, 1, 2, 2}));
}

TEST(InterpolateTest, LinearFollowsAlignCorners) {
  // align_corners: corners meet, o maps to o * (in - 1) / (out - 1).
  const std::vector<double> aligned = resample_ramp(InterpolateMode::Linear, 3, 5, true);
  for (int64_t o = 0; o < 5; ++o) EXPECT_NEAR(aligned[o], o * 2.0 / 4.0, 1e-6);
  // Half-pixel centres, clamped at the borders: o maps to (o + 0.5) * in / out - 0.5.
  const std::vector<double> centred = resample_ramp(InterpolateMode::Linear, 3, 5, false);
  for (int64_t o = 0; o < 5; ++o) {
    EXPECT_NEAR(centred[o], std::clamp((o + 0.5) * 3.0 / 5.0 - 0.5, 0.0, 2.0), 1e-6);
  }
}

TEST(InterpolateTest, CubicReproducesLinearSignalsInside) {
  // Keys' kernel interpolates a linear ramp exactly away from the clamped borders.
  HostTensor in = make_tensor(DType::Float32, {1, 1, 6, 6});
  for_each_index(in.view, [&](const Index& i) { set(in.view, i, 2.0 * i[2] - 0.5 * i[3]); });
  HostTensor out = make_tensor(DType::Float32, {1, 1, 11, 11});
  interpolate_forward(out.view, in.view, params_for(InterpolateMode::Cubic, true));
  for_each_index(out.view, [&](const Index& o) {
    const double y = o[2] * 0.5, x = o[3] * 0.5;
    if (y < 1.0 || y > 4.0 || x < 1.0 || x > 4.0) return;
    EXPECT_NEAR(get(out.view, o), 2.0 * y - 0.5 * x, 1e-5);
  });
}

double dot(const TensorView& a, const TensorView& b) {
  double sum = 0.0;
  for_each_index(a, [&](const Index& i) { sum += get(a, i) * get(b, i); });
  return sum;
}

struct AdjointCase {
  InterpolateMode mode;
  bool align_corners;
  std::vector<int64_t> in_sizes, out_sizes;
};

class InterpolateAdjointTest : public ::testing::TestWithParam<AdjointCase> {};

// <forward(x), g> == <x, backward(g)> for every mode and rank: backward scatters each output's
// gradient onto exactly the taps forward read, with the same weights.
TEST_P(InterpolateAdjointTest, BackwardIsTheAdjointOfForward) {
  const AdjointCase& c = GetParam();
  std::mt19937 rng(7);
  const InterpolateParams p = params_for(c.mode, c.align_corners);
  HostTensor x = random_tensor(DType::Float32, c.in_sizes, rng);
  HostTensor g = random_tensor(DType::Float32, c.out_sizes, rng);
  HostTensor y = make_tensor(DType::Float32, c.out_sizes);
  HostTensor gx = make_tensor(DType::Float32, c.in_sizes);
  interpolate_forward(y.view, x.view, p);
  interpolate_backward(gx.view, g.view, p);
  EXPECT_NEAR(dot(y.view, g.view), dot(x.view, gx.view), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, InterpolateAdjointTest,
    ::testing::Values(AdjointCase{InterpolateMode::Nearest, false, {2, 3, 7}, {2, 3, 12}},
                      AdjointCase{InterpolateMode::NearestExact, false, {2, 3, 5, 7}, {2, 3, 3, 9}},
                      AdjointCase{
                          InterpolateMode::Nearest, false, {1, 2, 3, 4, 5}, {1, 2, 6, 8, 7}},
                      AdjointCase{InterpolateMode::Linear, false, {2, 2, 5, 7}, {2, 2, 9, 4}},
                      AdjointCase{InterpolateMode::Linear, true, {2, 2, 5, 7}, {2, 2, 9, 4}},
                      AdjointCase{InterpolateMode::Linear, true, {1, 2, 3, 4, 5}, {1, 2, 5, 3, 9}},
                      AdjointCase{InterpolateMode::Cubic, false, {1, 3, 4, 6}, {1, 3, 9, 5}},
                      AdjointCase{InterpolateMode::Cubic, true, {1, 3, 4, 6}, {1, 3, 9, 5}}));

TEST(InterpolateTest, StridedInputAndBFloat16OutputRoundOnce) {
  std::mt19937 rng(8);
  // A channels-last buffer [N, H, W, C] seen as [N, C, H, W].
  HostTensor storage = random_tensor(DType::Float32, {2, 5, 6, 3}, rng);
  const TensorView strided = permute(storage.view, {0, 3, 1, 2});
  HostTensor dense = make_tensor(DType::Float32, {2, 3, 5, 6});
  for_each_index(dense.view, [&](const Index& i) { set(dense.view, i, get(strided, i)); });
  const InterpolateParams p = params_for(InterpolateMode::Linear, false);
  HostTensor want = make_tensor(DType::Float32, {2, 3, 8, 11});
  HostTensor got = make_tensor(DType::BFloat16, {2, 3, 8, 11});
  interpolate_forward(want.view, dense.view, p);
  interpolate_forward(got.view, strided, p);
  for_each_index(got.view, [&](const Index& i) {
    EXPECT_EQ(get(got.view, i), testing::round_to(DType::BFloat16, get(want.view, i)));
  });
}

TEST(InterpolateTest, NearestGathersStridedSixteenBitElementsAsIs) {
  std::mt19937 rng(10);
  // bf16 channels-last input and output, against the fp32 path on dense copies.
  HostTensor storage = random_tensor(DType::BFloat16, {2, 3, 4, 5, 3}, rng);
  const TensorView strided = permute(storage.view, {0, 4, 1, 2, 3});
  HostTensor dense = make_tensor(DType::Float32, {2, 3, 3, 4, 5});
  for_each_index(dense.view, [&](const Index& i) { set(dense.view, i, get(strided, i)); });
  HostTensor out_storage = make_tensor(DType::BFloat16, {2, 5, 7, 9, 3});
  const TensorView out = permute(out_storage.view, {0, 4, 1, 2, 3});
  HostTensor want = make_tensor(DType::Float32, {2, 3, 5, 7, 9});
  for (InterpolateMode mode : {InterpolateMode::Nearest, InterpolateMode::NearestExact}) {
    interpolate_forward(out, strided, params_for(mode));
    interpolate_forward(want.view, dense.view, params_for(mode));
    for_each_index(want.view, [&](const Index& i) { EXPECT_EQ(get(out, i), get(want.view, i)); });
  }
}

TEST(InterpolateTest, BackwardIsDeterministic) {
  std::mt19937 rng(9);
  HostTensor g = random_tensor(DType::Float32, {4, 8, 31, 29}, rng);
  HostTensor first = make_tensor(DType::Float32, {4, 8, 13, 11});
  HostTensor second = make_tensor(DType::Float32, {4, 8, 13, 11});
  const InterpolateParams p = params_for(InterpolateMode::Cubic, false);
  interpolate_backward(first.view, g.view, p);
  interpolate_backward(second.view, g.view, p);
  for_each_index(first.view,
                 [&](const Index& i) { ASSERT_EQ(get(first.view, i), get(second.view, i)); });
}

TEST(InterpolateTest, RejectsMismatchedViews) {
  HostTensor in = make_tensor(DType::Float32, {1, 2, 4});
  HostTensor out = make_tensor(DType::Float32, {1, 3, 8});
  EXPECT_THROW(interpolate_forward(out.view, in.view, params_for(InterpolateMode::Nearest)),
               std::invalid_argument);
  HostTensor out1d = make_tensor(DType::Float32, {1, 2, 8});
  EXPECT_THROW(interpolate_forward(out1d.view, in.view, params_for(InterpolateMode::Cubic)),
               std::invalid_argument);
}

}  // namespace
}  // namespace openneuron::kernels
