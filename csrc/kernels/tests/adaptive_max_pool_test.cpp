// Adaptive max pooling against a double loop over the windows the definition gives, with
// uneven windows (7 -> 3), a channels-last input, fp32/bf16/fp16, NaN, and the backward
// (max_pool2d_backward over the saved indices).
#include "kernels/nn/adaptive_max_pool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/nn/pooling.h"
#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::HostTensor;
using testing::make_tensor;
using testing::permute;
using testing::random_tensor;
using Index = std::vector<int64_t>;

class AdaptiveMaxPool : public ::testing::TestWithParam<DType> {};

TEST_P(AdaptiveMaxPool, MatchesWindowsAndScattersGradient) {
  const DType dtype = GetParam();
  std::mt19937 rng(4);
  const int64_t N = 2, C = 3, H = 7, W = 5, OH = 3, OW = 4;
  // Stored [N, H, W, C] and read as [N, C, H, W]: a channels-last input.
  HostTensor storage = random_tensor(dtype, {N, H, W, C}, rng);
  const TensorView input = permute(storage.view, {0, 3, 1, 2});
  HostTensor out = make_tensor(dtype, {N, C, OH, OW});
  HostTensor indices = make_tensor(DType::Int64, {N, C, OH, OW});
  adaptive_max_pool2d_forward(out.view, indices.view, input);
  testing::for_each_index(out.view, [&](const Index& i) {
    const int64_t h0 = i[2] * H / OH, h1 = ((i[2] + 1) * H + OH - 1) / OH;
    const int64_t w0 = i[3] * W / OW, w1 = ((i[3] + 1) * W + OW - 1) / OW;
    double best = -std::numeric_limits<double>::infinity();
    int64_t best_index = -1;
    for (int64_t h = h0; h < h1; ++h) {
      for (int64_t w = w0; w < w1; ++w) {
        const double value = get(input, {i[0], i[1], h, w});
        if (value > best) {
          best = value;
          best_index = h * W + w;
        }
      }
    }
    EXPECT_EQ(get(out.view, i), best);
    EXPECT_EQ(get(indices.view, i), static_cast<double>(best_index));
  });

  HostTensor grad_out = random_tensor(dtype, {N, C, OH, OW}, rng);
  HostTensor grad_input = make_tensor(dtype, {N, C, H, W});
  max_pool2d_backward(grad_input.view, grad_out.view, indices.view);
  HostTensor expected = make_tensor(DType::Float64, {N, C, H, W});
  testing::for_each_index(grad_out.view, [&](const Index& i) {
    const auto flat = static_cast<int64_t>(get(indices.view, i));
    const Index target{i[0], i[1], flat / W, flat % W};
    testing::set(expected.view, target, get(expected.view, target) + get(grad_out.view, i));
  });
  testing::for_each_index(grad_input.view, [&](const Index& i) {
    const double want = get(expected.view, i);
    EXPECT_NEAR(get(grad_input.view, i), want, testing::tolerance(dtype, want));
  });
}

INSTANTIATE_TEST_SUITE_P(Dtypes, AdaptiveMaxPool,
                         ::testing::Values(DType::Float32, DType::BFloat16, DType::Float16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(AdaptiveMaxPoolNaN, NaNWins) {
  HostTensor input = make_tensor(DType::Float32, {1, 1, 1, 4});
  const double values[] = {1.0, std::nan(""), 5.0, 2.0};
  for (int64_t k = 0; k < 4; ++k) testing::set(input.view, {0, 0, 0, k}, values[k]);
  HostTensor out = make_tensor(DType::Float32, {1, 1, 1, 1});
  HostTensor indices = make_tensor(DType::Int64, {1, 1, 1, 1});
  adaptive_max_pool2d_forward(out.view, indices.view, input.view);
  EXPECT_TRUE(std::isnan(get(out.view, {0, 0, 0, 0})));
  EXPECT_EQ(get(indices.view, {0, 0, 0, 0}), 1.0);
}

}  // namespace
}  // namespace openneuron::kernels
