// 3-D pooling (max with indices, average with its divisor rules, adaptive average, and their
// backward passes) against loops written from the definitions, and the elementwise and margin
// losses against hand-computed values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/nn/margin_loss.h"
#include "kernels/nn/pointwise_loss.h"
#include "kernels/nn/pool3d.h"
#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::HostTensor;
using testing::make_tensor;
using testing::random_tensor;
using Index = std::vector<int64_t>;

TEST(Pool3d, MaxAverageAndAdaptiveMatchTheDefinitions) {
  std::mt19937 rng(5);
  const int64_t d = 4, h = 5, w = 3;
  HostTensor input = random_tensor(DType::Float32, {1, 2, d, h, w}, rng, -1, 1);
  Pool3dParams p;
  p.kernel[0] = 2, p.kernel[1] = 3, p.kernel[2] = 2;
  p.stride[0] = 1, p.stride[1] = 2, p.stride[2] = 1;
  p.padding[1] = 1, p.padding[2] = 1;
  p.count_include_pad = false;
  const int64_t od = 3, oh = 3, ow = 4;
  HostTensor max_out = make_tensor(DType::Float32, {1, 2, od, oh, ow});
  HostTensor indices = make_tensor(DType::Int64, {1, 2, od, oh, ow});
  HostTensor avg_out = make_tensor(DType::Float32, {1, 2, od, oh, ow});
  max_pool3d_forward(max_out.view, indices.view, input.view, p);
  avg_pool3d_forward(avg_out.view, input.view, p);
  testing::for_each_index(max_out.view, [&](const Index& o) {
    double best = -INFINITY, sum = 0;
    int64_t count = 0, best_flat = -1;
    for (int64_t kd = 0; kd < p.kernel[0]; ++kd)
      for (int64_t kh = 0; kh < p.kernel[1]; ++kh)
        for (int64_t kw = 0; kw < p.kernel[2]; ++kw) {
          const int64_t id = o[2] * p.stride[0] - p.padding[0] + kd;
          const int64_t ih = o[3] * p.stride[1] - p.padding[1] + kh;
          const int64_t iw = o[4] * p.stride[2] - p.padding[2] + kw;
          if (id < 0 || id >= d || ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
          const double v = get(input.view, {0, o[1], id, ih, iw});
          if (v > best) best = v, best_flat = (id * h + ih) * w + iw;
          sum += v, ++count;
        }
    ASSERT_DOUBLE_EQ(get(max_out.view, o), best);
    ASSERT_EQ(static_cast<int64_t>(get(indices.view, o)), best_flat);
    ASSERT_NEAR(get(avg_out.view, o), sum / count, 1e-6);
  });
  // The max backward routes each gradient to its argmax.
  HostTensor grad_out = random_tensor(DType::Float32, {1, 2, od, oh, ow}, rng, -1, 1);
  HostTensor grad_in = make_tensor(DType::Float32, {1, 2, d, h, w});
  max_pool3d_backward(grad_in.view, grad_out.view, indices.view);
  std::vector<double> expected(static_cast<size_t>(2 * d * h * w), 0.0);
  testing::for_each_index(grad_out.view, [&](const Index& o) {
    expected[o[1] * d * h * w + static_cast<int64_t>(get(indices.view, o))] +=
        get(grad_out.view, o);
  });
  testing::for_each_index(grad_in.view, [&](const Index& i) {
    ASSERT_NEAR(get(grad_in.view, i), expected[((i[1] * d + i[2]) * h + i[3]) * w + i[4]], 1e-6);
  });
  // Adaptive average to (2, 3, 2): cells cover [floor(o*I/O), ceil((o+1)*I/O)).
  HostTensor adaptive = make_tensor(DType::Float32, {1, 2, 2, 3, 2});
  adaptive_avg_pool3d_forward(adaptive.view, input.view);
  testing::for_each_index(adaptive.view, [&](const Index& o) {
    const int64_t in[3] = {d, h, w}, out[3] = {2, 3, 2};
    int64_t lo[3], hi[3];
    for (int k = 0; k < 3; ++k) {
      lo[k] = o[2 + k] * in[k] / out[k];
      hi[k] = ((o[2 + k] + 1) * in[k] + out[k] - 1) / out[k];
    }
    double sum = 0;
    for (int64_t a = lo[0]; a < hi[0]; ++a)
      for (int64_t b = lo[1]; b < hi[1]; ++b)
        for (int64_t c = lo[2]; c < hi[2]; ++c) sum += get(input.view, {0, o[1], a, b, c});
    ASSERT_NEAR(get(adaptive.view, o), sum / ((hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2])),
                1e-6);
  });
}

TEST(PointwiseLoss, HuberSmoothL1AndBceValuesAndGradients) {
  HostTensor x = make_tensor(DType::Float32, {3});
  HostTensor t = make_tensor(DType::Float32, {3});
  const float xs[3] = {0.2f, 0.9f, 0.5f}, ts[3] = {0.0f, 0.1f, 1.0f};
  std::copy(xs, xs + 3, static_cast<float*>(x.view.data));
  std::copy(ts, ts + 3, static_cast<float*>(t.view.data));
  HostTensor out = make_tensor(DType::Float32, {3});
  HostTensor ones = make_tensor(DType::Float32, {3});
  std::fill_n(static_cast<float*>(ones.view.data), 3, 1.0f);
  HostTensor grad = make_tensor(DType::Float32, {3});
  const auto at = [](const HostTensor& v, int64_t i) { return get(v.view, {i}); };
  // Huber, delta 0.5: |d| = 0.2 (quadratic), 0.8 and 0.5 (linear).
  pointwise_loss_forward(out.view, x.view, t.view, nullptr, PointwiseLoss::Huber,
                         LossReduction::None, 0.5);
  EXPECT_NEAR(at(out, 0), 0.5 * 0.04, 1e-7);
  EXPECT_NEAR(at(out, 1), 0.5 * (0.8 - 0.25), 1e-6);
  EXPECT_NEAR(at(out, 2), 0.5 * (0.5 - 0.25), 1e-6);
  pointwise_loss_backward(grad.view, ones.view, x.view, t.view, nullptr, PointwiseLoss::Huber,
                          LossReduction::None, 0.5);
  EXPECT_NEAR(at(grad, 0), 0.2, 1e-7);
  EXPECT_NEAR(at(grad, 1), 0.5, 1e-7);
  EXPECT_NEAR(at(grad, 2), -0.5, 1e-7);
  // Smooth L1, beta 0.5, summed.
  HostTensor total = make_tensor(DType::Float32, {});
  pointwise_loss_forward(total.view, x.view, t.view, nullptr, PointwiseLoss::SmoothL1,
                         LossReduction::Sum, 0.5);
  EXPECT_NEAR(get(total.view, {}), 0.04 + (0.8 - 0.25) + (0.5 - 0.25), 1e-6);
  // Binary cross-entropy, mean.
  pointwise_loss_forward(total.view, x.view, t.view, nullptr, PointwiseLoss::BinaryCrossEntropy,
                         LossReduction::Mean, 0.0);
  const double bce =
      (-std::log(0.8) - (0.1 * std::log(0.9) + 0.9 * std::log(0.1)) - std::log(0.5)) / 3;
  EXPECT_NEAR(get(total.view, {}), bce, 1e-6);
}

TEST(MarginLoss, MultiMarginValuesAndGradients) {
  HostTensor x = make_tensor(DType::Float32, {1, 3});
  const float xs[3] = {0.1f, 0.5f, -0.4f};
  std::copy(xs, xs + 3, static_cast<float*>(x.view.data));
  HostTensor target = make_tensor(DType::Int64, {1});
  static_cast<int64_t*>(target.view.data)[0] = 1;
  HostTensor out = make_tensor(DType::Float32, {});
  // Margin 1, p 1: terms max(0, 1 - 0.5 + 0.1) = 0.6 and max(0, 1 - 0.5 - 0.4) = 0.1, over 3.
  multi_margin_loss_forward(out.view, x.view, target.view, nullptr, 1, 1.0, LossReduction::Mean);
  EXPECT_NEAR(get(out.view, {}), 0.7 / 3, 1e-6);
  HostTensor upstream = make_tensor(DType::Float32, {});
  static_cast<float*>(upstream.view.data)[0] = 1.0f;
  HostTensor grad = make_tensor(DType::Float32, {1, 3});
  multi_margin_loss_backward(grad.view, upstream.view, x.view, target.view, nullptr, 1, 1.0,
                             LossReduction::Mean);
  EXPECT_NEAR(get(grad.view, {0, 0}), 1.0 / 3, 1e-6);
  EXPECT_NEAR(get(grad.view, {0, 1}), -2.0 / 3, 1e-6);
  EXPECT_NEAR(get(grad.view, {0, 2}), 1.0 / 3, 1e-6);
}

}  // namespace
}  // namespace openneuron::kernels
