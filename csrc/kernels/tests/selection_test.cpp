// kthvalue, median, mode and running extremes: values against a sorted copy, indices pointing
// at an equal element (which of the equal ones is the CPU's is checked in the Python tests),
// median's index by its (value, index) rank, NaN rules.
#include "kernels/shape/selection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "kernels/reduce/running_extreme.h"
#include "kernels/tests/test_util.h"

namespace openneuron::kernels {
namespace {

using testing::get;
using testing::make_tensor;
using testing::set;

std::vector<double> line_of(const TensorView& view, int64_t row) {
  std::vector<double> values;
  for (int64_t j = 0; j < view.sizes[1]; ++j) values.push_back(get(view, {row, j}));
  return values;
}

TEST(Selection, KthValueIsTheKthOfTheSortedLine) {
  std::mt19937 rng(11);
  auto in = make_tensor(DType::Float32, {6, 37});
  testing::fill_random(in.view, rng, -3, 3);
  for (int64_t i = 0; i < 37; i += 5) set(in.view, {2, i}, 1.0);  // ties
  for (int64_t k : {1, 9, 37}) {
    auto values = make_tensor(DType::Float32, {6, 1});
    auto indices = make_tensor(DType::Int64, {6, 1});
    kthvalue(values.view, indices.view, in.view, 1, k);
    for (int64_t r = 0; r < 6; ++r) {
      std::vector<double> line = line_of(in.view, r);
      const auto index = static_cast<int64_t>(get(indices.view, {r, 0}));
      std::sort(line.begin(), line.end());
      EXPECT_EQ(get(values.view, {r, 0}), line[k - 1]);
      EXPECT_EQ(get(in.view, {r, index}), line[k - 1]);
    }
  }
  auto values = make_tensor(DType::Float32, {6, 1});
  auto indices = make_tensor(DType::Int64, {6, 1});
  EXPECT_THROW(kthvalue(values.view, indices.view, in.view, 1, 38), std::invalid_argument);
}

TEST(Selection, MedianTakesTheLowerMiddleByValueThenIndex) {
  auto in = make_tensor(DType::Int32, {1, 6});
  const double data[] = {4, 2, 4, 2, 4, 2};
  for (int64_t j = 0; j < 6; ++j) set(in.view, {0, j}, data[j]);
  auto values = make_tensor(DType::Int32, {1, 1});
  auto indices = make_tensor(DType::Int64, {1, 1});
  median(values.view, indices.view, in.view, 1, /*ignore_nan=*/false);
  EXPECT_EQ(get(values.view, {0, 0}), 2);
  EXPECT_EQ(get(indices.view, {0, 0}), 5);  // the third 2 by index: rank (6 - 1) / 2
}

TEST(Selection, MedianAndNanMedianTreatNanAsTheCpuDoes) {
  auto in = make_tensor(DType::Float32, {1, 5});
  const double data[] = {3, NAN, 1, NAN, 2};
  for (int64_t j = 0; j < 5; ++j) set(in.view, {0, j}, data[j]);
  auto values = make_tensor(DType::Float32, {1, 1});
  auto indices = make_tensor(DType::Int64, {1, 1});
  median(values.view, indices.view, in.view, 1, /*ignore_nan=*/false);
  EXPECT_TRUE(std::isnan(get(values.view, {0, 0})));
  EXPECT_EQ(get(indices.view, {0, 0}), 1);  // the first NaN
  median(values.view, indices.view, in.view, 1, /*ignore_nan=*/true);
  EXPECT_EQ(get(values.view, {0, 0}), 2);
  EXPECT_EQ(get(indices.view, {0, 0}), 4);
}

TEST(Selection, ModeIsTheSmallestMostFrequentValue) {
  auto in = make_tensor(DType::Int8, {2, 7});
  const double data[2][7] = {{5, 1, 5, 1, 3, 3, 9}, {0, 0, 0, 7, 7, 7, 7}};
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t j = 0; j < 7; ++j) set(in.view, {r, j}, data[r][j]);
  auto values = make_tensor(DType::Int8, {2, 1});
  auto indices = make_tensor(DType::Int64, {2, 1});
  mode(values.view, indices.view, in.view, 1);
  EXPECT_EQ(get(values.view, {0, 0}), 1);
  EXPECT_EQ(get(in.view, {0, static_cast<int64_t>(get(indices.view, {0, 0}))}), 1);
  EXPECT_EQ(get(values.view, {1, 0}), 7);
}

TEST(RunningExtreme, LaterEqualsAndNanTakeOver) {
  auto in = make_tensor(DType::Float32, {1, 7});
  const double data[] = {1, 3, 2, 3, NAN, 5, NAN};
  for (int64_t j = 0; j < 7; ++j) set(in.view, {0, j}, data[j]);
  auto values = make_tensor(DType::Float32, {1, 7});
  auto indices = make_tensor(DType::Int64, {1, 7});
  running_extreme(values.view, indices.view, in.view, 1, /*largest=*/true);
  const int64_t want_index[] = {0, 1, 1, 3, 4, 4, 6};
  for (int64_t j = 0; j < 7; ++j) EXPECT_EQ(get(indices.view, {0, j}), want_index[j]) << j;
  EXPECT_EQ(get(values.view, {0, 3}), 3);
  EXPECT_TRUE(std::isnan(get(values.view, {0, 5})));
  running_extreme(values.view, indices.view, in.view, 1, /*largest=*/false);
  EXPECT_EQ(get(indices.view, {0, 3}), 0);
  EXPECT_EQ(get(indices.view, {0, 6}), 6);
}

}  // namespace
}  // namespace openneuron::kernels
