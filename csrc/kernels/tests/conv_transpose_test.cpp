// Transposed 2-D convolution (forward, input/weight/bias gradients) against double loops
// written from its definition: each input element scatters weight * value onto the output
// window it spreads to. Strides, padding, output padding, dilation, groups, 1-D problems
// (height 1), fp32 / bf16 / fp16.
#include "kernels/matmul/conv_transpose.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::HostTensor;
using testing::make_tensor;
using testing::random_tensor;
using Index = std::vector<int64_t>;

struct Problem {
  std::string name;
  int64_t batch, in_channels, height, width, out_channels, kernel_h, kernel_w;
  int64_t stride[2], padding[2], output_padding[2], dilation[2], groups;
  bool bias;
};

Conv2dParams params_of(const Problem& c) {
  Conv2dParams p;
  for (int d = 0; d < 2; ++d) {
    p.stride[d] = c.stride[d];
    p.padding[d] = c.padding[d];
    p.dilation[d] = c.dilation[d];
  }
  p.groups = c.groups;
  return p;
}

int64_t out_size(const Problem& c, int d) {
  const int64_t in = d == 0 ? c.height : c.width;
  const int64_t kernel = d == 0 ? c.kernel_h : c.kernel_w;
  return (in - 1) * c.stride[d] - 2 * c.padding[d] + c.dilation[d] * (kernel - 1) +
         c.output_padding[d] + 1;
}

// Calls fn(n, c, ih, iw, o, oh, ow, kh, kw) for every (input element, weight tap) pair that
// lands inside the output.
template <typename Fn>
void for_each_tap(const Problem& c, Fn fn) {
  const int64_t cg = c.in_channels / c.groups, og = c.out_channels / c.groups;
  const int64_t oh_size = out_size(c, 0), ow_size = out_size(c, 1);
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t ch = 0; ch < c.in_channels; ++ch)
      for (int64_t ih = 0; ih < c.height; ++ih)
        for (int64_t iw = 0; iw < c.width; ++iw)
          for (int64_t o = 0; o < og; ++o)
            for (int64_t kh = 0; kh < c.kernel_h; ++kh)
              for (int64_t kw = 0; kw < c.kernel_w; ++kw) {
                const int64_t oh = ih * c.stride[0] - c.padding[0] + kh * c.dilation[0];
                const int64_t ow = iw * c.stride[1] - c.padding[1] + kw * c.dilation[1];
                if (oh < 0 || oh >= oh_size || ow < 0 || ow >= ow_size) continue;
                fn(n, ch, ih, iw, (ch / cg) * og + o, o, oh, ow, kh, kw);
              }
}

// Relative error bound: a sum of `terms` products of values below 1 in magnitude.
double bound(DType dtype, double magnitude) {
  switch (dtype) {
    case DType::Float32:
      return 1e-4 * (1 + magnitude);
    case DType::BFloat16:
      return 1.6e-2 * (1 + magnitude);
    default:
      return 2e-3 * (1 + magnitude);
  }
}

class ConvTranspose : public ::testing::TestWithParam<DType> {};

TEST_P(ConvTranspose, ForwardAndGradientsMatchDefinition) {
  const DType dtype = GetParam();
  const std::vector<Problem> problems = {
      {"plain", 2, 3, 5, 6, 4, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, true},
      {"stride2_pad1_outpad1", 2, 4, 4, 5, 6, 3, 3, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1, true},
      {"groups_dilation", 3, 4, 5, 4, 6, 2, 3, {2, 1}, {0, 1}, {1, 0}, {2, 1}, 2, false},
      {"one_d", 2, 3, 1, 9, 5, 1, 4, {1, 3}, {0, 2}, {0, 2}, {1, 1}, 1, true},
  };
  std::mt19937 rng(11);
  for (const Problem& c : problems) {
    SCOPED_TRACE(c.name + " " + dtype_name(dtype));
    const int64_t oh = out_size(c, 0), ow = out_size(c, 1);
    HostTensor input = random_tensor(dtype, {c.batch, c.in_channels, c.height, c.width}, rng);
    HostTensor weight = random_tensor(
        dtype, {c.in_channels, c.out_channels / c.groups, c.kernel_h, c.kernel_w}, rng);
    HostTensor bias = random_tensor(dtype, {c.out_channels}, rng);
    HostTensor out = make_tensor(dtype, {c.batch, c.out_channels, oh, ow});
    const Conv2dParams params = params_of(c);
    conv_transpose2d_forward(out.view, input.view, weight.view, c.bias ? &bias.view : nullptr,
                             params);

    std::vector<double> expected(static_cast<size_t>(out.view.numel()), 0.0);
    const auto out_index = [&](int64_t n, int64_t o, int64_t h, int64_t w) {
      return static_cast<size_t>(((n * c.out_channels + o) * oh + h) * ow + w);
    };
    for_each_tap(c, [&](int64_t n, int64_t ch, int64_t ih, int64_t iw, int64_t o, int64_t og,
                        int64_t h, int64_t w, int64_t kh, int64_t kw) {
      expected[out_index(n, o, h, w)] +=
          get(input.view, {n, ch, ih, iw}) * get(weight.view, {ch, og, kh, kw});
    });
    testing::for_each_index(out.view, [&](const Index& i) {
      double value = expected[out_index(i[0], i[1], i[2], i[3])];
      if (c.bias) value += get(bias.view, {i[1]});
      EXPECT_NEAR(get(out.view, i), value, bound(dtype, std::fabs(value)));
    });

    // Backward: grad_out is a fresh random tensor.
    HostTensor grad_out = random_tensor(dtype, {c.batch, c.out_channels, oh, ow}, rng);
    HostTensor grad_input = make_tensor(dtype, {c.batch, c.in_channels, c.height, c.width});
    HostTensor grad_weight =
        make_tensor(dtype, {c.in_channels, c.out_channels / c.groups, c.kernel_h, c.kernel_w});
    HostTensor grad_bias = make_tensor(dtype, {c.out_channels});
    conv_transpose2d_backward(&grad_input.view, &grad_weight.view, &grad_bias.view, grad_out.view,
                              input.view, weight.view, params);
    std::vector<double> gi(static_cast<size_t>(grad_input.view.numel()), 0.0);
    std::vector<double> gw(static_cast<size_t>(grad_weight.view.numel()), 0.0);
    const int64_t ogs = c.out_channels / c.groups;
    for_each_tap(c, [&](int64_t n, int64_t ch, int64_t ih, int64_t iw, int64_t o, int64_t og,
                        int64_t h, int64_t w, int64_t kh, int64_t kw) {
      const double g = get(grad_out.view, {n, o, h, w});
      gi[static_cast<size_t>(((n * c.in_channels + ch) * c.height + ih) * c.width + iw)] +=
          g * get(weight.view, {ch, og, kh, kw});
      gw[static_cast<size_t>(((ch * ogs + og) * c.kernel_h + kh) * c.kernel_w + kw)] +=
          g * get(input.view, {n, ch, ih, iw});
    });
    testing::for_each_index(grad_input.view, [&](const Index& i) {
      const double value = gi[static_cast<size_t>(
          ((i[0] * c.in_channels + i[1]) * c.height + i[2]) * c.width + i[3])];
      EXPECT_NEAR(get(grad_input.view, i), value, bound(dtype, std::fabs(value)));
    });
    testing::for_each_index(grad_weight.view, [&](const Index& i) {
      const double value =
          gw[static_cast<size_t>(((i[0] * ogs + i[1]) * c.kernel_h + i[2]) * c.kernel_w + i[3])];
      EXPECT_NEAR(get(grad_weight.view, i), value, bound(dtype, std::fabs(value)));
    });
    for (int64_t o = 0; o < c.out_channels; ++o) {
      double value = 0.0;
      for (int64_t n = 0; n < c.batch; ++n)
        for (int64_t h = 0; h < oh; ++h)
          for (int64_t w = 0; w < ow; ++w) value += get(grad_out.view, {n, o, h, w});
      EXPECT_NEAR(get(grad_bias.view, {o}), value, bound(dtype, std::fabs(value)));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ConvTranspose,
                         ::testing::Values(DType::Float32, DType::BFloat16, DType::Float16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(ConvTransposeChecks, OutputPaddingAtTheStrideIsRefused) {
  std::mt19937 rng(3);
  HostTensor input = random_tensor(DType::Float32, {1, 2, 3, 3}, rng);
  HostTensor weight = random_tensor(DType::Float32, {2, 2, 3, 3}, rng);
  // stride 1 allows no output padding: 5 + 1 rows would need output padding 1.
  HostTensor out = make_tensor(DType::Float32, {1, 2, 6, 5});
  EXPECT_THROW(conv_transpose2d_forward(out.view, input.view, weight.view, nullptr, {}),
               std::invalid_argument);
}

}  // namespace
}  // namespace openneuron::kernels
