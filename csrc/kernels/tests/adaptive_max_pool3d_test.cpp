// Adaptive 3-D max pooling against a scan of each window: uneven windows, strided output and
// indices, 16-bit inputs, ties (the first maximum) and NaN (the last NaN).
#include "kernels/nn/adaptive_max_pool3d.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::make_tensor;
using testing::set;

void expect_windows(const TensorView& out, const TensorView& indices, const TensorView& input) {
  const int64_t D = input.sizes[2], H = input.sizes[3], W = input.sizes[4];
  testing::for_each_index(out, [&](const std::vector<int64_t>& o) {
    const int64_t d0 = o[2] * D / out.sizes[2],
                  d1 = ((o[2] + 1) * D + out.sizes[2] - 1) / out.sizes[2];
    const int64_t h0 = o[3] * H / out.sizes[3],
                  h1 = ((o[3] + 1) * H + out.sizes[3] - 1) / out.sizes[3];
    const int64_t w0 = o[4] * W / out.sizes[4],
                  w1 = ((o[4] + 1) * W + out.sizes[4] - 1) / out.sizes[4];
    double best = -std::numeric_limits<double>::infinity();
    int64_t best_index = -1;
    for (int64_t d = d0; d < d1; ++d)
      for (int64_t h = h0; h < h1; ++h)
        for (int64_t w = w0; w < w1; ++w) {
          const double value = get(input, {o[0], o[1], d, h, w});
          if (best_index < 0 || value > best || std::isnan(value)) {
            best = value;
            best_index = (d * H + h) * W + w;
          }
        }
    const double got = get(out, o);
    if (std::isnan(best)) {
      EXPECT_TRUE(std::isnan(got));
    } else {
      EXPECT_EQ(got, best);
    }
    EXPECT_EQ(get(indices, o), best_index);
  });
}

TEST(AdaptiveMaxPool3d, MatchesAScanOfEveryWindow) {
  std::mt19937 rng(7);
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float16}) {
    auto input = testing::random_tensor(dtype, {2, 3, 5, 7, 4}, rng);
    auto out = make_tensor(dtype, {2, 3, 3, 2, 4});
    auto indices = make_tensor(DType::Int64, {2, 3, 3, 2, 4});
    adaptive_max_pool3d_forward(out.view, indices.view, input.view);
    expect_windows(out.view, indices.view, input.view);
  }
}

TEST(AdaptiveMaxPool3d, StridedViewsTiesAndNaN) {
  auto input = make_tensor(DType::Float32, {1, 2, 2, 2, 2});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  set(input.view, {0, 0, 0, 0, 1}, 3);  // a tie: the first 3 is kept
  set(input.view, {0, 0, 1, 1, 0}, 3);
  set(input.view, {0, 1, 0, 0, 1}, nan);  // two NaNs: the last one is kept
  set(input.view, {0, 1, 1, 1, 0}, nan);
  set(input.view, {0, 1, 1, 0, 0}, 9);
  auto out_storage = make_tensor(DType::Float32, {1, 1, 1, 1, 2});
  auto idx_storage = make_tensor(DType::Int64, {1, 1, 1, 1, 2});
  const TensorView out = testing::permute(out_storage.view, {0, 4, 1, 2, 3});
  const TensorView indices = testing::permute(idx_storage.view, {0, 4, 1, 2, 3});
  adaptive_max_pool3d_forward(out, indices, input.view);
  expect_windows(out, indices, input.view);
  EXPECT_EQ(get(indices, {0, 0, 0, 0, 0}), 1);
  EXPECT_EQ(get(indices, {0, 1, 0, 0, 0}), 6);
}

TEST(AdaptiveMaxPool3d, RefusesMismatchedViews) {
  auto input = make_tensor(DType::Float32, {1, 1, 2, 2, 2});
  auto out = make_tensor(DType::Float32, {1, 1, 1, 1, 1});
  auto int32_indices = make_tensor(DType::Int32, {1, 1, 1, 1, 1});
  EXPECT_THROW(adaptive_max_pool3d_forward(out.view, int32_indices.view, input.view),
               std::invalid_argument);
  auto empty_volume = make_tensor(DType::Float32, {1, 1, 0, 2, 2});
  auto indices = make_tensor(DType::Int64, {1, 1, 1, 1, 1});
  EXPECT_THROW(adaptive_max_pool3d_forward(out.view, indices.view, empty_volume.view),
               std::invalid_argument);
}

}  // namespace
}  // namespace openneuron::kernels
