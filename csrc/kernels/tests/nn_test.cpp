// The nn kernels (conv, pooling, normalisation, losses, attention) against double-precision
// reference loops, including non-contiguous and 16-bit operands.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/attention/attention.h"
#include "kernels/matmul/conv.h"
#include "kernels/nn/loss.h"
#include "kernels/nn/normalization.h"
#include "kernels/nn/pooling.h"
#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::close;
using testing::for_each_index;
using testing::get;
using testing::HostTensor;
using testing::make_tensor;
using testing::permute;
using testing::random_tensor;
using testing::set;
using Index = std::vector<int64_t>;

// Expects every element of `actual` to match `expected(index)` within the dtype's tolerance
// (scaled by `slack` for long fp32 sums).
void expect_all(const TensorView& actual, const std::function<double(const Index&)>& expected,
                double slack = 1.0) {
  for_each_index(actual, [&](const Index& i) {
    const double want = expected(i);
    const double got = get(actual, i);
    EXPECT_NEAR(got, want, slack * testing::tolerance(actual.dtype, want)) << "at flat index";
  });
}

// ---------------------------------------------------------------- conv

double conv_reference(const TensorView& in, const TensorView& w, const TensorView* bias,
                      const Conv2dParams& p, const Index& o) {
  const int64_t n = o[0], oc = o[1], oh = o[2], ow = o[3];
  const int64_t cg = w.sizes[1], og = w.sizes[0] / p.groups, g = oc / og;
  double sum = bias ? get(*bias, {oc}) : 0.0;
  for (int64_t c = 0; c < cg; ++c) {
    for (int64_t kh = 0; kh < w.sizes[2]; ++kh) {
      for (int64_t kw = 0; kw < w.sizes[3]; ++kw) {
        const int64_t ih = oh * p.stride[0] - p.padding[0] + kh * p.dilation[0];
        const int64_t iw = ow * p.stride[1] - p.padding[1] + kw * p.dilation[1];
        if (ih < 0 || ih >= in.sizes[2] || iw < 0 || iw >= in.sizes[3]) continue;
        sum += get(in, {n, g * cg + c, ih, iw}) * get(w, {oc, c, kh, kw});
      }
    }
  }
  return sum;
}

struct ConvCase {
  int64_t channels, out_channels, groups, kernel, stride, padding, dilation;
};

class ConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTest, ForwardAndBackwardMatchReference) {
  const ConvCase c = GetParam();
  std::mt19937 rng(7);
  Conv2dParams p;
  p.groups = c.groups;
  for (int d = 0; d < 2; ++d) {
    p.stride[d] = c.stride;
    p.padding[d] = c.padding;
    p.dilation[d] = c.dilation;
  }
  const int64_t n = 2, h = 7, w = 6;
  const int64_t oh = (h + 2 * c.padding - c.dilation * (c.kernel - 1) - 1) / c.stride + 1;
  const int64_t ow = (w + 2 * c.padding - c.dilation * (c.kernel - 1) - 1) / c.stride + 1;
  // Input stored as NHWC and viewed as NCHW: a non-contiguous operand.
  HostTensor input_nhwc = random_tensor(DType::Float32, {n, h, w, c.channels}, rng);
  const TensorView input = permute(input_nhwc.view, {0, 3, 1, 2});
  HostTensor weight = random_tensor(
      DType::Float32, {c.out_channels, c.channels / c.groups, c.kernel, c.kernel}, rng);
  HostTensor bias = random_tensor(DType::Float32, {c.out_channels}, rng);
  HostTensor out = make_tensor(DType::Float32, {n, c.out_channels, oh, ow});
  conv2d_forward(out.view, input, weight.view, &bias.view, p);
  expect_all(
      out.view,
      [&](const Index& o) { return conv_reference(input, weight.view, &bias.view, p, o); }, 10.0);

  // Backward: with grad_out = G, d/dx sum(G * conv(x)) etc. checked against the reference
  // by linearity: grad_weight[o,c,kh,kw] = sum G * x_shifted, grad_bias[o] = sum G.
  HostTensor grad_out = random_tensor(DType::Float32, {n, c.out_channels, oh, ow}, rng);
  HostTensor grad_in = make_tensor(DType::Float32, {n, c.channels, h, w});
  HostTensor grad_w = make_tensor(
      DType::Float32, weight.view.sizes[0]
                          ? std::vector<int64_t>(weight.view.sizes, weight.view.sizes + 4)
                          : std::vector<int64_t>{});
  HostTensor grad_b = make_tensor(DType::Float32, {c.out_channels});
  conv2d_backward(&grad_in.view, &grad_w.view, &grad_b.view, grad_out.view, input, weight.view, p);
  std::vector<double> ref_in(static_cast<size_t>(grad_in.view.numel()), 0.0);
  std::vector<double> ref_w(static_cast<size_t>(grad_w.view.numel()), 0.0);
  std::vector<double> ref_b(static_cast<size_t>(c.out_channels), 0.0);
  const int64_t cg = c.channels / c.groups, og = c.out_channels / c.groups;
  for_each_index(grad_out.view, [&](const Index& o) {
    const double g = get(grad_out.view, o);
    ref_b[o[1]] += g;
    const int64_t grp = o[1] / og;
    for (int64_t ci = 0; ci < cg; ++ci) {
      for (int64_t kh = 0; kh < c.kernel; ++kh) {
        for (int64_t kw = 0; kw < c.kernel; ++kw) {
          const int64_t ih = o[2] * c.stride - c.padding + kh * c.dilation;
          const int64_t iw = o[3] * c.stride - c.padding + kw * c.dilation;
          if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
          const int64_t ch = grp * cg + ci;
          ref_w[((o[1] * cg + ci) * c.kernel + kh) * c.kernel + kw] +=
              g * get(input, {o[0], ch, ih, iw});
          ref_in[((o[0] * c.channels + ch) * h + ih) * w + iw] +=
              g * get(weight.view, {o[1], ci, kh, kw});
        }
      }
    }
  });
  expect_all(
      grad_in.view,
      [&](const Index& i) { return ref_in[((i[0] * c.channels + i[1]) * h + i[2]) * w + i[3]]; },
      10.0);
  expect_all(
      grad_w.view,
      [&](const Index& i) {
        return ref_w[((i[0] * cg + i[1]) * c.kernel + i[2]) * c.kernel + i[3]];
      },
      20.0);
  expect_all(grad_b.view, [&](const Index& i) { return ref_b[i[0]]; }, 20.0);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvTest,
                         ::testing::Values(ConvCase{3, 4, 1, 3, 1, 1, 1},
                                           ConvCase{4, 6, 2, 3, 2, 2, 2},
                                           ConvCase{4, 4, 4, 3, 1, 1, 1},  // depthwise
                                           ConvCase{5, 3, 1, 1, 1, 0, 1},  // pointwise
                                           ConvCase{2, 2, 1, 2, 3, 0, 1}));

TEST(ConvTest, BFloat16RoundsOnceFromFp32) {
  std::mt19937 rng(3);
  Conv2dParams p;
  p.padding[0] = p.padding[1] = 1;
  HostTensor in = random_tensor(DType::BFloat16, {1, 3, 5, 5}, rng);
  HostTensor w = random_tensor(DType::BFloat16, {2, 3, 3, 3}, rng);
  HostTensor out = make_tensor(DType::BFloat16, {1, 2, 5, 5});
  conv2d_forward(out.view, in.view, w.view, nullptr, p);
  expect_all(out.view,
             [&](const Index& o) { return conv_reference(in.view, w.view, nullptr, p, o); });
}

// ---------------------------------------------------------------- pooling

TEST(PoolingTest, MaxPoolPicksMaximaAndRoutesGradients) {
  std::mt19937 rng(5);
  HostTensor in = random_tensor(DType::Float32, {2, 3, 7, 6}, rng);
  Pool2dParams p;
  p.kernel[0] = p.kernel[1] = 3;
  p.stride[0] = p.stride[1] = 2;
  p.padding[0] = p.padding[1] = 1;
  HostTensor out = make_tensor(DType::Float32, {2, 3, 4, 3});
  HostTensor idx = make_tensor(DType::Int64, {2, 3, 4, 3});
  max_pool2d_forward(out.view, idx.view, in.view, p);
  for_each_index(out.view, [&](const Index& o) {
    double best = -std::numeric_limits<double>::infinity();
    for (int64_t ih = o[2] * 2 - 1; ih < o[2] * 2 + 2; ++ih) {
      for (int64_t iw = o[3] * 2 - 1; iw < o[3] * 2 + 2; ++iw) {
        if (ih >= 0 && ih < 7 && iw >= 0 && iw < 6)
          best = std::max(best, get(in.view, {o[0], o[1], ih, iw}));
      }
    }
    EXPECT_EQ(get(out.view, o), best);
    const int64_t flat = static_cast<int64_t>(get(idx.view, o));
    EXPECT_EQ(get(in.view, {o[0], o[1], flat / 6, flat % 6}), best);
  });
  HostTensor grad_out = random_tensor(DType::Float32, {2, 3, 4, 3}, rng);
  HostTensor grad_in = make_tensor(DType::Float32, {2, 3, 7, 6});
  max_pool2d_backward(grad_in.view, grad_out.view, idx.view);
  std::vector<double> ref(static_cast<size_t>(grad_in.view.numel()), 0.0);
  for_each_index(grad_out.view, [&](const Index& o) {
    const int64_t flat = static_cast<int64_t>(get(idx.view, o));
    ref[(o[0] * 3 + o[1]) * 42 + flat] += get(grad_out.view, o);
  });
  expect_all(grad_in.view,
             [&](const Index& i) { return ref[(i[0] * 3 + i[1]) * 42 + i[2] * 6 + i[3]]; });
}

TEST(PoolingTest, AvgPoolDivisorsAndAdaptiveWindows) {
  std::mt19937 rng(6);
  HostTensor in = random_tensor(DType::Float32, {1, 2, 5, 5}, rng);
  for (bool include_pad : {true, false}) {
    Pool2dParams p;
    p.kernel[0] = p.kernel[1] = 3;
    p.stride[0] = p.stride[1] = 2;
    p.padding[0] = p.padding[1] = 1;
    p.count_include_pad = include_pad;
    HostTensor out = make_tensor(DType::Float32, {1, 2, 3, 3});
    avg_pool2d_forward(out.view, in.view, p);
    expect_all(out.view, [&](const Index& o) {
      double sum = 0.0;
      int64_t count = 0;
      for (int64_t ih = o[2] * 2 - 1; ih < o[2] * 2 + 2; ++ih) {
        for (int64_t iw = o[3] * 2 - 1; iw < o[3] * 2 + 2; ++iw) {
          if (ih >= 0 && ih < 5 && iw >= 0 && iw < 5) {
            sum += get(in.view, {o[0], o[1], ih, iw});
            ++count;
          }
        }
      }
      return sum / (include_pad ? 9.0 : static_cast<double>(count));
    });
  }
  HostTensor out = make_tensor(DType::Float32, {1, 2, 3, 2});
  adaptive_avg_pool2d_forward(out.view, in.view);
  expect_all(out.view, [&](const Index& o) {
    const int64_t h0 = o[2] * 5 / 3, h1 = ((o[2] + 1) * 5 + 2) / 3;
    const int64_t w0 = o[3] * 5 / 2, w1 = ((o[3] + 1) * 5 + 1) / 2;
    double sum = 0.0;
    for (int64_t ih = h0; ih < h1; ++ih) {
      for (int64_t iw = w0; iw < w1; ++iw) sum += get(in.view, {o[0], o[1], ih, iw});
    }
    return sum / static_cast<double>((h1 - h0) * (w1 - w0));
  });
}

// ---------------------------------------------------------------- normalisation

TEST(NormalizationTest, BatchNormTrainingStatisticsAndRunningUpdate) {
  std::mt19937 rng(8);
  HostTensor in = random_tensor(DType::Float32, {4, 3, 5}, rng);
  HostTensor out = make_tensor(DType::Float32, {4, 3, 5});
  HostTensor mean = make_tensor(DType::Float32, {3}), invstd = make_tensor(DType::Float32, {3});
  HostTensor running_mean = make_tensor(DType::Float32, {3});
  HostTensor running_var = make_tensor(DType::Float32, {3});
  for (int64_t c = 0; c < 3; ++c) set(running_var.view, {c}, 1.0);
  batch_norm_forward(out.view, &mean.view, &invstd.view, in.view, nullptr, nullptr,
                     &running_mean.view, &running_var.view, true, 0.1, 1e-5);
  for (int64_t c = 0; c < 3; ++c) {
    double sum = 0.0, sq = 0.0;
    for (int64_t n = 0; n < 4; ++n) {
      for (int64_t m = 0; m < 5; ++m) sum += get(in.view, {n, c, m});
    }
    const double mu = sum / 20.0;
    for (int64_t n = 0; n < 4; ++n) {
      for (int64_t m = 0; m < 5; ++m) sq += std::pow(get(in.view, {n, c, m}) - mu, 2);
    }
    EXPECT_NEAR(get(mean.view, {c}), mu, 1e-6);
    EXPECT_NEAR(get(invstd.view, {c}), 1.0 / std::sqrt(sq / 20.0 + 1e-5), 1e-4);
    EXPECT_NEAR(get(running_mean.view, {c}), 0.1 * mu, 1e-6);
    EXPECT_NEAR(get(running_var.view, {c}), 0.9 + 0.1 * sq / 19.0, 1e-5);
    for (int64_t n = 0; n < 4; ++n) {
      EXPECT_NEAR(get(out.view, {n, c, 0}),
                  (get(in.view, {n, c, 0}) - mu) / std::sqrt(sq / 20.0 + 1e-5), 1e-4);
    }
  }
}

TEST(NormalizationTest, LayerAndRmsNormRowsAndGradients) {
  std::mt19937 rng(9);
  const int64_t rows = 3, d = 16;
  HostTensor in = random_tensor(DType::Float32, {rows, d}, rng);
  HostTensor weight = random_tensor(DType::Float32, {d}, rng);
  for (bool rms : {false, true}) {
    HostTensor out = make_tensor(DType::Float32, {rows, d});
    HostTensor mean = make_tensor(DType::Float32, {rows}),
               rstd = make_tensor(DType::Float32, {rows});
    row_norm_forward(out.view, &mean.view, rstd.view, in.view, &weight.view, nullptr, 1e-5, rms);
    // Gradient by central differences of sum(G * out) in double.
    HostTensor grad_out = random_tensor(DType::Float32, {rows, d}, rng);
    HostTensor grad_in = make_tensor(DType::Float32, {rows, d});
    row_norm_backward(&grad_in.view, nullptr, nullptr, grad_out.view, in.view, &mean.view,
                      rstd.view, &weight.view, rms);
    for (int64_t r = 0; r < rows; ++r) {
      auto loss = [&](int64_t j, double delta) {
        std::vector<double> x(d);
        for (int64_t i = 0; i < d; ++i) x[i] = get(in.view, {r, i}) + (i == j ? delta : 0.0);
        double mu = 0.0, ms = 0.0;
        for (double v : x) mu += v / d;
        if (rms) mu = 0.0;
        for (double v : x) ms += (v - mu) * (v - mu) / d;
        double total = 0.0;
        for (int64_t i = 0; i < d; ++i) {
          total += get(grad_out.view, {r, i}) * (x[i] - mu) / std::sqrt(ms + 1e-5) *
                   get(weight.view, {i});
        }
        return total;
      };
      {  // forward: (x - mean) * rstd * weight (mean 0 for RMS)
        double mu = 0.0, ms = 0.0;
        for (int64_t i = 0; i < d; ++i) mu += get(in.view, {r, i}) / d;
        if (rms) mu = 0.0;
        for (int64_t i = 0; i < d; ++i) ms += std::pow(get(in.view, {r, i}) - mu, 2) / d;
        for (int64_t i = 0; i < d; ++i) {
          EXPECT_NEAR(get(out.view, {r, i}),
                      (get(in.view, {r, i}) - mu) / std::sqrt(ms + 1e-5) * get(weight.view, {i}),
                      1e-5);
        }
      }
      for (int64_t j = 0; j < d; ++j) {
        const double numeric = (loss(j, 1e-4) - loss(j, -1e-4)) / 2e-4;
        EXPECT_NEAR(get(grad_in.view, {r, j}), numeric, 1e-3) << (rms ? "rms" : "layer");
      }
    }
  }
}

// ---------------------------------------------------------------- losses

TEST(LossTest, NllLossWeightsIgnoreIndexAndReductions) {
  HostTensor in = make_tensor(DType::Float32, {3, 4, 1});
  std::mt19937 rng(10);
  testing::fill_random(in.view, rng, -3.0, 0.0);
  HostTensor target = make_tensor(DType::Int64, {3, 1});
  set(target.view, {0, 0}, 1);
  set(target.view, {1, 0}, -100);
  set(target.view, {2, 0}, 3);
  HostTensor weight = make_tensor(DType::Float32, {4});
  for (int64_t c = 0; c < 4; ++c) set(weight.view, {c}, 0.5 + c);
  HostTensor out = make_tensor(DType::Float32, {}), total = make_tensor(DType::Float32, {});
  nll_loss_forward(out.view, total.view, in.view, target.view, &weight.view, LossReduction::Mean,
                   -100);
  const double expected_total = 1.5 + 3.5;
  const double expected =
      -(1.5 * get(in.view, {0, 1, 0}) + 3.5 * get(in.view, {2, 3, 0})) / expected_total;
  EXPECT_NEAR(get(total.view, {}), expected_total, 1e-6);
  EXPECT_NEAR(get(out.view, {}), expected, 1e-5);
  HostTensor grad_in = make_tensor(DType::Float32, {3, 4, 1});
  HostTensor grad_out = make_tensor(DType::Float32, {});
  set(grad_out.view, {}, 2.0);
  nll_loss_backward(grad_in.view, grad_out.view, target.view, &weight.view, LossReduction::Mean,
                    -100, total.view);
  EXPECT_NEAR(get(grad_in.view, {0, 1, 0}), -2.0 * 1.5 / expected_total, 1e-6);
  EXPECT_EQ(get(grad_in.view, {1, 0, 0}), 0.0);
  EXPECT_NEAR(get(grad_in.view, {2, 3, 0}), -2.0 * 3.5 / expected_total, 1e-6);
}

// ---------------------------------------------------------------- attention

TEST(AttentionTest, ForwardBackwardMatchReferenceWithCausalGqaAndMask) {
  std::mt19937 rng(11);
  const int64_t b = 2, h = 4, hk = 2, l = 70, s = 75, e = 8, ev = 6;
  HostTensor q = random_tensor(DType::Float32, {b, h, l, e}, rng);
  HostTensor k = random_tensor(DType::Float32, {b, hk, s, e}, rng);
  HostTensor v = random_tensor(DType::Float32, {b, hk, s, ev}, rng);
  HostTensor mask = random_tensor(DType::Float32, {1, 1, l, s}, rng);
  TensorView mask_view = testing::expand(mask.view, {b, h, l, s});
  AttentionParams p;
  p.scale = 0.4;
  p.is_causal = true;
  HostTensor out = make_tensor(DType::Float32, {b, h, l, ev});
  HostTensor lse = make_tensor(DType::Float32, {b, h, l});
  attention_forward(out.view, lse.view, q.view, k.view, v.view, &mask_view, p);
  HostTensor grad_out = random_tensor(DType::Float32, {b, h, l, ev}, rng);
  HostTensor gq = make_tensor(DType::Float32, {b, h, l, e});
  HostTensor gk = make_tensor(DType::Float32, {b, hk, s, e});
  HostTensor gv = make_tensor(DType::Float32, {b, hk, s, ev});
  attention_backward(&gq.view, &gk.view, &gv.view, nullptr, grad_out.view, q.view, k.view, v.view,
                     out.view, lse.view, &mask_view, p);
  std::vector<double> ref_gk(static_cast<size_t>(gk.view.numel()), 0.0),
      ref_gv(static_cast<size_t>(gv.view.numel()), 0.0);
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t hi = 0; hi < h; ++hi) {
      const int64_t kv = hi / (h / hk);
      for (int64_t i = 0; i < l; ++i) {
        std::vector<double> score(s), prob(s);
        double max_score = -1e300;
        for (int64_t j = 0; j < s; ++j) {
          double dot = 0.0;
          for (int64_t x = 0; x < e; ++x)
            dot += get(q.view, {bi, hi, i, x}) * get(k.view, {bi, kv, j, x});
          score[j] = j > i ? -1e300 : dot * 0.4 + get(mask.view, {0, 0, i, j});
          max_score = std::max(max_score, score[j]);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < s; ++j)
          sum += (prob[j] = j > i ? 0.0 : std::exp(score[j] - max_score));
        for (double& pj : prob) pj /= sum;
        EXPECT_NEAR(get(lse.view, {bi, hi, i}), max_score + std::log(sum), 1e-4);
        std::vector<double> o(ev, 0.0);
        for (int64_t y = 0; y < ev; ++y) {
          for (int64_t j = 0; j < s; ++j) o[y] += prob[j] * get(v.view, {bi, kv, j, y});
          EXPECT_NEAR(get(out.view, {bi, hi, i, y}), o[y], 1e-4);
        }
        // Backward: dP = dO V^T, dS = P (dP - sum(dO * O)).
        double dot_o = 0.0;
        for (int64_t y = 0; y < ev; ++y) dot_o += get(grad_out.view, {bi, hi, i, y}) * o[y];
        std::vector<double> dq(e, 0.0);
        for (int64_t j = 0; j < s; ++j) {
          double dp = 0.0;
          for (int64_t y = 0; y < ev; ++y) {
            dp += get(grad_out.view, {bi, hi, i, y}) * get(v.view, {bi, kv, j, y});
            ref_gv[((bi * hk + kv) * s + j) * ev + y] +=
                prob[j] * get(grad_out.view, {bi, hi, i, y});
          }
          const double ds = prob[j] * (dp - dot_o);
          for (int64_t x = 0; x < e; ++x) {
            dq[x] += 0.4 * ds * get(k.view, {bi, kv, j, x});
            ref_gk[((bi * hk + kv) * s + j) * e + x] += 0.4 * ds * get(q.view, {bi, hi, i, x});
          }
        }
        for (int64_t x = 0; x < e; ++x) EXPECT_NEAR(get(gq.view, {bi, hi, i, x}), dq[x], 1e-4);
      }
    }
  }
  expect_all(
      gk.view, [&](const Index& i) { return ref_gk[((i[0] * hk + i[1]) * s + i[2]) * e + i[3]]; },
      10.0);
  expect_all(
      gv.view, [&](const Index& i) { return ref_gv[((i[0] * hk + i[1]) * s + i[2]) * ev + i[3]]; },
      10.0);
}

TEST(AttentionTest, DropoutIsAFunctionOfSeedAndOffset) {
  std::mt19937 rng(12);
  HostTensor q = random_tensor(DType::Float32, {1, 2, 9, 4}, rng);
  AttentionParams p;
  p.scale = 0.5;
  p.dropout_p = 0.4;
  p.seed = 123;
  p.offset = 8;
  HostTensor a = make_tensor(DType::Float32, {1, 2, 9, 4}),
             b = make_tensor(DType::Float32, {1, 2, 9, 4});
  HostTensor lse = make_tensor(DType::Float32, {1, 2, 9});
  attention_forward(a.view, lse.view, q.view, q.view, q.view, nullptr, p);
  attention_forward(b.view, lse.view, q.view, q.view, q.view, nullptr, p);
  expect_all(b.view, [&](const Index& i) { return get(a.view, i); }, 0.0);
  p.offset += attention_dropout_offset_increment(1, 2, 9, 9);
  attention_forward(b.view, lse.view, q.view, q.view, q.view, nullptr, p);
  bool any_difference = false;
  for_each_index(a.view,
                 [&](const Index& i) { any_difference |= get(a.view, i) != get(b.view, i); });
  EXPECT_TRUE(any_difference);
}

}  // namespace
}  // namespace openneuron::kernels
